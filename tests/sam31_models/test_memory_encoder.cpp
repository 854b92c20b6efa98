// memory_encoder: parity with the official multiplex mask-memory encoder (modules/memory_encoder_*)
// through our runtime and ONNX Runtime; the antialiased resize weights.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "compiler/compile.h"
#include "models/sam31/config.h"
#include "models/sam31/memory_encoder.h"
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/weights.h"
#include "onnx/onnx_io.h"
#include "runtime/interpreter.h"
#include "verify/ort_peer.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/parity.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

struct EncoderModel {
  ModelConfig cfg;
  Weights w;
  std::vector<verify::ParityCase> cases;
};

EncoderModel& model() {
  static EncoderModel* m = [] {
    auto* p = new EncoderModel;
    p->cfg = segmux::verify::load_fixture_config(kFixture + "/config.json");
    p->w = Weights::load(kFixture + "/weights.safetensors");
    p->cases = verify::memory_encoder_parity_cases(kFixture, p->cfg);
    return p;
  }();
  return *m;
}

ir::Graph graph_for(const verify::ParityCase& c) {
  EncoderModel& m = model();
  return c.variant.empty() ? build_memory_encoder(m.cfg, m.w) : build_memory_encoder_variant(m.cfg, m.w, c.variant);
}

void expect_case_passes(const verify::ParityCase& c, const std::map<std::string, Tensor>& out,
                        const std::string& backend) {
  for (auto& [name, ref] : c.expected) {
    ASSERT_TRUE(out.count(name)) << backend << " " << c.label << ": no output " << name;
    verify::OutputCheck chk = verify::check_output(out.at(name), ref, c.tolerance.at(name));
    std::printf("[%s] %s %-22s cos=%.7f max_abs=%.3g (max|ref| %.3g)\n", backend.c_str(), c.label.c_str(), name.c_str(),
                chk.cosine, chk.max_abs, chk.max_ref);
    EXPECT_TRUE(chk.pass) << backend << " " << c.label << " " << name << ": " << chk.problem << " cos=" << chk.cosine
                          << " max_abs=" << chk.max_abs;
  }
}

}  // namespace

TEST(MemoryEncoder, CasesCoverBothMaskSizes) {
  EncoderModel& m = model();
  ASSERT_EQ(m.cases.size(), 3u);
  EXPECT_EQ(m.cases[0].variant, kMemoryEncoderImageSizeVariant);  // add_prompt: image_size masks
  EXPECT_EQ(m.cases[1].variant, "");
  EXPECT_EQ(m.cases[1].inputs.at("mask_logits").dim(2), m.cfg.input_mask_size());
  EXPECT_THROW(build_memory_encoder_variant(m.cfg, m.w, "no_such_variant"), Error);
}

TEST(MemoryEncoder, ParityThroughOurRuntime) {
  for (auto& c : model().cases) {
    Interpreter s(graph_for(c));
    expect_case_passes(c, s.run(c.inputs), "segmux");
  }
}

TEST(MemoryEncoder, ParityThroughOnnxRuntime) {
  std::string why;
  if (!ort_available(&why)) GTEST_SKIP() << "ONNX Runtime not available: " << why;
  for (auto& c : model().cases) {
    auto peer = verify::OrtPeer::from_bytes(onnx_io::export_onnx_bytes(graph_for(c)));
    expect_case_passes(c, peer->run(c.inputs), "onnxruntime");
  }
}

TEST(MemoryEncoder, StoredCopyIsTheBf16RoundingOfTheFeatures) {
  auto& c = model().cases[1];
  Interpreter s(graph_for(c));
  auto out = s.run(c.inputs);
  const Tensor& f = out.at("maskmem_features");
  const Tensor& h = out.at("maskmem_features_bf16");
  ASSERT_EQ(h.dtype(), DType::bf16);
  for (int64_t i = 0; i < f.numel(); ++i)
    ASSERT_EQ(h.data<uint16_t>()[i], f32_to_bf16(f.data<float>()[i])) << "element " << i;
}

TEST(MemoryEncoder, AntialiasTapsFollowPyTorch) {
  // Same size: identity.
  ResizeTaps same = antialias_bilinear_taps(5, 5);
  for (int64_t i = 0; i < 5; ++i) {
    float total = 0;
    for (size_t k = 0; k < same.index[size_t(i)].size(); ++k)
      if (same.index[size_t(i)][k] == i) total += same.weight[size_t(i)][k];
    EXPECT_FLOAT_EQ(total, 1.0f);
  }
  // Upsampling: plain bilinear (align_corners=False, edge clamped).
  const int64_t in = 7, out = 8;
  ResizeTaps up = antialias_bilinear_taps(in, out);
  for (int64_t i = 0; i < out; ++i) {
    double src = std::max(0.0, (double(i) + 0.5) * double(in) / double(out) - 0.5);
    int64_t i0 = int64_t(std::floor(src));
    double frac = src - double(i0);
    std::vector<double> want(size_t(in), 0.0);
    want[size_t(i0)] += 1.0 - frac;
    want[size_t(std::min(i0 + 1, in - 1))] += frac;
    std::vector<double> got(size_t(in), 0.0);
    for (size_t k = 0; k < up.index[size_t(i)].size(); ++k)
      got[size_t(up.index[size_t(i)][k])] += up.weight[size_t(i)][k];
    for (int64_t j = 0; j < in; ++j) EXPECT_NEAR(got[size_t(j)], want[size_t(j)], 1e-6) << i << "," << j;
  }
  // Downsampling by 4 (antialias): 8 taps of a triangle widened 4x, normalized.
  ResizeTaps down = antialias_bilinear_taps(16, 4);
  for (int64_t i = 0; i < 4; ++i) {
    double sum = 0;
    for (float wv : down.weight[size_t(i)]) {
      sum += wv;
      EXPECT_GE(wv, 0.0f);
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_GE(down.index[size_t(i)].size(), 4u);
  }
}

TEST(MemoryEncoder, GraphUsesStandardOnnxOpsOnly) {
  EncoderModel& m = model();
  ir::Graph g = build_memory_encoder(m.cfg, m.w);
  for (auto& n : g.nodes) EXPECT_EQ(n.domain, "") << n.describe();
}

TEST(MemoryEncoder, ParityAfterCompilation) {
  for (auto& c : model().cases) {
    Interpreter s(compiler::compile_graph(graph_for(c)).graph);
    expect_case_passes(c, s.run(c.inputs), "compiled");
  }
}

// Nothing is sized for the fixture: the full-size official configuration builds (shape inference only)
// with zero weights of the official full-size shapes, and the contract shapes come out.
TEST(MemoryEncoder, FullSizeTrackerGraphsBuild) {
  std::ifstream f(kFixture + "/official_fullsize_state_dict_shapes.json");
  ASSERT_TRUE(f.good());
  nlohmann::json shapes = nlohmann::json::parse(f);
  Weights w;
  for (auto& [key, v] : shapes.items()) {
    if (key.rfind("tracker.model.", 0) != 0 || key.rfind("tracker.model.backbone.", 0) == 0) continue;
    if (v[1].get<std::string>() != "float32") continue;
    w.set(key, Tensor(DType::f32, v[0].get<Shape>()));
  }
  const ModelConfig cfg = default_config();
  const int64_t D = cfg.d_model, g = cfg.token_grid(), M = cfg.multiplex_count;
  auto out_shape = [](const ir::Graph& gr, const std::string& name) {
    for (int v : gr.outputs)
      if (gr.value(v).name == name) return gr.value(v).shape;
    return Shape{};
  };
  ir::Graph enc = build_memory_encoder(cfg, w);
  EXPECT_EQ(out_shape(enc, "maskmem_features_bf16"), (Shape{1, D, g, g}));
  ir::Graph enc_img = build_memory_encoder_variant(cfg, w, kMemoryEncoderImageSizeVariant);
  EXPECT_EQ(out_shape(enc_img, "maskmem_features"), (Shape{1, D, g, g}));
  ir::Graph prop = build_propagation_decoder(cfg, w);
  EXPECT_EQ(out_shape(prop, "masks"), (Shape{1, M, cfg.num_multimask_outputs, 4 * g, 4 * g}));
  EXPECT_EQ(out_shape(prop, "obj_ptr"), (Shape{1, M, D}));
}
