#include <gtest/gtest.h>

#include "models/sam31/config.h"
#include "models/sam31/interactive_decoder.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/parity.h"

using namespace segmux;
using namespace segmux::sam31;

static std::string fixture() { return std::string(SEGMUX_FIXTURES) + "/sam31-tiny"; }

// The tracker bar of issue 3: cosine >= 0.9999, max abs <= 2e-2 * max(1, max|ref|).
TEST(InteractiveDecoder, ObjectPointersMatchTheOfficialAddPromptStep) {
  ModelConfig cfg = segmux::verify::load_fixture_config(fixture() + "/config.json");
  Weights w = Weights::load(fixture() + "/weights.safetensors");
  Interpreter session(build_interactive_decoder(cfg, w), InterpreterOptions{1, false});
  auto cases = verify::interactive_decoder_parity_cases(fixture(), cfg);
  ASSERT_EQ(cases.size(), 3u);
  verify::Tolerance tol;
  tol.min_cosine = 0.9999;
  tol.max_abs_over_scale = 2e-2;
  tol.scale_is_max_ref = false;
  for (auto& c : cases) {
    auto out = session.run(c.inputs);
    for (auto& [name, ref] : c.expected) {
      verify::OutputCheck r = verify::check_output(out.at(name), ref, tol);
      EXPECT_TRUE(r.pass) << c.label << " " << name << ": cosine " << r.cosine << " max abs " << r.max_abs << " "
                          << r.problem;
    }
    EXPECT_EQ(out.at("object_score_logit").data<float>()[0], 10.0f);
  }
}

TEST(InteractiveDecoder, EmptyMaskGivesTheNoObjectScore) {
  ModelConfig cfg = segmux::verify::load_fixture_config(fixture() + "/config.json");
  Weights w = Weights::load(fixture() + "/weights.safetensors");
  Interpreter session(build_interactive_decoder(cfg, w), InterpreterOptions{1, false});
  auto cases = verify::interactive_decoder_parity_cases(fixture(), cfg);
  auto inputs = cases[0].inputs;
  inputs["mask"] = Tensor(DType::f32, inputs["mask"].shape());
  auto out = session.run(inputs);
  EXPECT_EQ(out.at("object_score_logit").data<float>()[0], -10.0f);
}
