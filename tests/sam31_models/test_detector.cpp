// Detector candidate: structure, and every stage against the official intermediate tensors of
// modules/detector.safetensors (geometry encoder, prompt, fusion memory, decoder states and boxes,
// presence, scores), then the final outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "core/tensor_ops.h"
#include "io/safetensors.h"
#include "models/sam31/config.h"
#include "models/sam31/detector.h"
#include "models/sam31/weights.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/parity.h"

namespace segmux::sam31 {
namespace {

const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

struct DetectorRun {
  ModelConfig cfg;
  std::map<std::string, Tensor> out;
  TensorFile fixture;
};

const DetectorRun& run_once() {
  static DetectorRun r = [] {
    DetectorRun d;
    d.cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
    Weights w = Weights::load(kDir + "/weights.safetensors");
    DetectorOptions o;
    o.debug_outputs = true;
    Interpreter s(build_detector(d.cfg, w, o), InterpreterOptions{1, false});
    auto cases = verify::detector_parity_cases(kDir, d.cfg);
    d.out = s.run(cases.at(1).inputs);  // the detector-module fixture (frame 1)
    d.fixture = read_safetensors(kDir + "/modules/detector.safetensors");
    return d;
  }();
  return r;
}

void expect_close(const std::string& what, const Tensor& got, const Tensor& ref) {
  verify::OutputCheck c = verify::check_output(got.reshaped(ref.shape()), ref, verify::Tolerance{});
  EXPECT_TRUE(c.pass) << what << ": cosine " << c.cosine << " max_abs " << c.max_abs << " ratio " << c.ratio << " "
                      << c.problem;
}

TEST(Detector, GraphHasTheContractSignature) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  ir::Graph g = build_detector(cfg, w);
  std::vector<std::string> ins, outs;
  for (int v : g.inputs) ins.push_back(g.value(v).name);
  for (int v : g.outputs) outs.push_back(g.value(v).name);
  EXPECT_EQ(ins, (std::vector<std::string>{"fpn0", "fpn1", "fpn2", "pos2", "language_features", "language_mask",
                                           "text_ids", "boxes", "box_labels", "box_padding"}));
  EXPECT_EQ(outs, (std::vector<std::string>{"pred_logits", "pred_boxes", "pred_boxes_xyxy", "pred_masks",
                                            "presence_logit_dec", "queries", "semantic_seg"}));
  for (auto& n : g.nodes) EXPECT_EQ(n.domain, "") << n.describe() << " is not a standard ONNX op";
}

TEST(Detector, GeometryEncoderAndPrompt) {
  const auto& r = run_once();
  // No box: every box slot is padding; the geometry is the CLS token (slot N) alone.
  const int64_t N = r.cfg.detector_max_boxes, T = r.cfg.text_context_length;
  expect_close("geometry", take(r.out.at("dbg_geometry"), 0, N, 1), r.fixture.at("call.geometry_encoder.out.0"));
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < T; ++i) rows.push_back(i);
  rows.push_back(T + N);
  expect_close("prompt", take_indices(r.out.at("dbg_prompt"), 0, rows),
               r.fixture.at("call.fusion_encoder.kwargs.prompt"));
}

TEST(Detector, FusionEncoderMemory) {
  const auto& r = run_once();
  expect_close("memory", r.out.at("dbg_memory"), r.fixture.at("call.fusion_encoder.out.memory"));
}

TEST(Detector, DecoderStatesBoxesPresence) {
  const auto& r = run_once();
  expect_close("hs", r.out.at("dbg_hs"), r.fixture.at("call.decoder.out.0"));
  expect_close("refs", r.out.at("dbg_refs"), r.fixture.at("call.decoder.out.1"));
  expect_close("presence", r.out.at("dbg_presence_layers"), r.fixture.at("call.decoder.out.2"));
  const Tensor& scores = r.fixture.at("call.dot_prod_scoring.out");  // L,B,Q,1
  expect_close("scores", r.out.at("dbg_class_logits"), take(scores, 0, scores.dim(0) - 1, 1));
}

TEST(Detector, FinalOutputsOfTheModuleFixture) {
  const auto& r = run_once();
  auto cases = verify::detector_parity_cases(kDir, r.cfg);
  for (auto& [name, ref] : cases.at(1).expected) expect_close(name, r.out.at(name), ref);
}

TEST(Detector, Frame0MatchesTheRawGroundingOutputs) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  auto cases = verify::detector_parity_cases(kDir, cfg);
  const verify::ParityCase& pc = cases.at(0);
  Interpreter s(build_detector(cfg, w), InterpreterOptions{1, false});
  auto out = s.run(pc.inputs);
  for (auto& [name, ref] : pc.expected) {
    Tensor got = out.at(name);
    auto sel = pc.select.find(name);
    if (sel != pc.select.end()) got = take_indices(got, sel->second.axis, sel->second.indices);
    expect_close(name, got, ref);
  }
}

TEST(Detector, RejectsInconsistentConfig) {
  ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  cfg.attn_heads = 7;
  EXPECT_THROW(build_detector(cfg, w), Error);
  cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  cfg.d_model = 32;  // does not match the weights
  EXPECT_THROW(build_detector(cfg, w), Error);
}

}  // namespace
}  // namespace segmux::sam31

namespace segmux::sam31 {
namespace {
// The detector-module fixture grounds frame 1: its level-2 features are not the backbone fixture's
// (frame 0), while the position encodings (frame independent) are identical.
TEST(Detector, ModuleFixtureIsAnotherFrame) {
  TensorFile bb = read_safetensors(kDir + "/modules/backbone.safetensors");
  TensorFile f = read_safetensors(kDir + "/modules/detector.safetensors");
  auto seq = [](const Tensor& t) { return permute(t.reshaped({t.dim(0), t.dim(1), t.dim(2) * t.dim(3)}), {2, 0, 1}); };
  verify::OutputCheck c = verify::check_output(seq(bb.at("out.det.fpn2")),
                                               f.at("call.geometry_encoder.kwargs.img_feats.0"), verify::Tolerance{});
  EXPECT_LT(c.cosine, 0.999);
  c = verify::check_output(seq(bb.at("out.pos2")), f.at("call.geometry_encoder.kwargs.img_pos_embeds.0"),
                           verify::Tolerance{});
  EXPECT_EQ(c.max_abs, 0.0);
}
}  // namespace
}  // namespace segmux::sam31

namespace segmux::sam31 {
namespace {
// A batch of two frames grounds each entry independently: entry k equals the single-frame run of
// its own features and prompt.
TEST(Detector, BatchEntriesAreIndependent) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  Weights w = Weights::load(kDir + "/weights.safetensors");
  auto cases = verify::detector_parity_cases(kDir, cfg);
  Interpreter one(build_detector(cfg, w), InterpreterOptions{1, false});
  DetectorOptions o2;
  o2.batch = 2;
  Interpreter two(build_detector(cfg, w, o2), InterpreterOptions{1, false});
  const auto& a = cases.at(0).inputs;  // frame 0, prompt 0
  auto b = a;                          // frame 1 level 2, prompt 1 ("visual")
  b["fpn2"] = cases.at(1).inputs.at("fpn2");
  b["text_ids"] = Tensor::from_vector<int64_t>({1}, {1});
  auto cat = [](const Tensor& x, const Tensor& y) {
    Shape s = x.shape();
    s[0] *= 2;
    Tensor t(x.dtype(), s);
    std::memcpy(t.raw(), x.raw(), x.nbytes());
    std::memcpy(static_cast<std::byte*>(t.raw()) + x.nbytes(), y.raw(), y.nbytes());
    return t;
  };
  std::map<std::string, Tensor> in2 = a;
  for (const char* k : {"fpn0", "fpn1", "fpn2", "pos2", "boxes", "box_labels", "box_padding"})
    in2[k] = cat(a.at(k), b.at(k));
  in2["text_ids"] = Tensor::from_vector<int64_t>({2}, {0, 1});
  auto out2 = two.run(in2);
  auto oa = one.run(a), ob = one.run(b);
  for (const char* k : {"pred_logits", "pred_boxes", "pred_masks", "presence_logit_dec"}) {
    const Tensor& t = out2.at(k);
    expect_close(std::string(k) + "[0]", take(t, 0, 0, 1), oa.at(k));
    expect_close(std::string(k) + "[1]", take(t, 0, 1, 1), ob.at(k));
  }
}
}  // namespace
}  // namespace segmux::sam31
