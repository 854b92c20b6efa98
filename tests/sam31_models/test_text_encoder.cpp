// Text encoder candidate: signature, parity with the official outputs, causal independence of
// padding, bad configs.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "models/sam31/config.h"
#include "models/sam31/text_encoder.h"
#include "models/sam31/weights.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/parity.h"

namespace segmux::sam31 {
namespace {

const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

TEST(TextEncoder, SignatureFollowsTheConfig) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  TextEncoderOptions o;
  o.batch = 2;
  ir::Graph g = build_text_encoder(cfg, w, o);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{2, cfg.text_context_length}));
  ASSERT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{cfg.text_context_length, 2, cfg.d_model}));
  EXPECT_EQ(g.value(g.outputs[1]).dtype, DType::boolean);
  EXPECT_EQ(g.value(g.outputs[2]).shape, (Shape{cfg.text_context_length, 2, cfg.text_width}));
  for (auto& n : g.nodes) EXPECT_EQ(n.domain, "") << n.describe();
}

TEST(TextEncoder, MatchesTheOfficialOutputs) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  Interpreter s(build_text_encoder(cfg, w), InterpreterOptions{1, false});
  for (const verify::ParityCase& pc : verify::text_encoder_parity_cases(kDir, cfg)) {
    auto out = s.run(pc.inputs);
    for (auto& [name, ref] : pc.expected) {
      verify::OutputCheck c = verify::check_output(out.at(name), ref, verify::Tolerance{});
      EXPECT_TRUE(c.pass) << pc.label << " " << name << ": cosine " << c.cosine << " ratio " << c.ratio;
    }
  }
}

TEST(TextEncoder, PaddingContentDoesNotChangeValidTokens) {
  // Causal attention: tokens after EOT never reach earlier positions.
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  TextEncoderOptions o;
  o.batch = 1;
  Interpreter s(build_text_encoder(cfg, w, o), InterpreterOptions{1, false});
  const int T = cfg.text_context_length;
  std::vector<int64_t> ids(size_t(T), 0);
  ids[0] = 49406, ids[1] = 320, ids[2] = 49407;
  auto a = s.run({{"token_ids", Tensor::from_vector<int64_t>({1, T}, ids)}});
  ids[5] = 1234;
  auto b = s.run({{"token_ids", Tensor::from_vector<int64_t>({1, T}, ids)}});
  const Tensor& fa = a.at("language_features");
  const Tensor& fb = b.at("language_features");
  const int64_t D = fa.dim(2);
  for (int64_t i = 0; i < 3 * D; ++i) EXPECT_EQ(fa.data<float>()[i], fb.data<float>()[i]);
  EXPECT_FALSE(b.at("language_mask").data<bool>()[5]);
  EXPECT_TRUE(a.at("language_mask").data<bool>()[5]);
}

TEST(TextEncoder, RejectsConfigsThatDoNotFitTheWeights) {
  ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  cfg.text_width = 96;
  EXPECT_THROW(build_text_encoder(cfg, w), Error);
  cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  cfg.text_heads = 5;
  EXPECT_THROW(build_text_encoder(cfg, w), Error);
  cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  TextEncoderOptions o;
  o.batch = 0;
  EXPECT_THROW(build_text_encoder(cfg, w, o), Error);
}

}  // namespace
}  // namespace segmux::sam31
