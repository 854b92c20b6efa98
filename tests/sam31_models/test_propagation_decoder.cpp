// propagation_decoder: parity with the official SAM 3.1 propagation step (modules/propagation_f001,
// propagation_f010) through our runtime and ONNX Runtime, plus the padding and no-memory contracts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>

#include "compiler/compile.h"
#include "io/safetensors.h"
#include "ir/op_schema.h"
#include "models/sam31/config.h"
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

struct Model {
  ModelConfig cfg;
  Weights w;
  std::vector<verify::ParityCase> cases;
  std::unique_ptr<Interpreter> session;
};

Model& model() {
  static Model* m = [] {
    auto* p = new Model;
    p->cfg = segmux::verify::load_fixture_config(kFixture + "/config.json");
    p->w = Weights::load(kFixture + "/weights.safetensors");
    p->cases = verify::propagation_decoder_parity_cases(kFixture, p->cfg);
    p->session = std::make_unique<Interpreter>(build_propagation_decoder(p->cfg, p->w));
    return p;
  }();
  return *m;
}

void expect_case_passes(const verify::ParityCase& c, const std::map<std::string, Tensor>& out,
                        const std::string& backend) {
  for (auto& [name, ref] : c.expected) {
    ASSERT_TRUE(out.count(name)) << backend << " " << c.label << ": no output " << name;
    verify::OutputCheck chk = verify::check_output(out.at(name), ref, c.tolerance.at(name));
    std::printf("[%s] %s %-20s cos=%.7f max_abs=%.3g (max|ref| %.3g)%s\n", backend.c_str(), c.label.c_str(),
                name.c_str(), chk.cosine, chk.max_abs, chk.max_ref,
                chk.iou_checked ? (" iou=" + std::to_string(chk.mask_iou)).c_str() : "");
    EXPECT_TRUE(chk.pass) << backend << " " << c.label << " " << name << ": " << chk.problem << " cos=" << chk.cosine
                          << " max_abs=" << chk.max_abs;
  }
}

}  // namespace

TEST(PropagationDecoder, GraphHasTheContractShapes) {
  Model& m = model();
  const ir::Graph& g = m.session->graph();
  const int64_t S = propagation_memory_slots(m.cfg), P = propagation_pointer_slots(m.cfg);
  EXPECT_EQ(S, m.cfg.max_cond_frames_in_attn + m.cfg.num_maskmem - 1);
  EXPECT_EQ(P, m.cfg.max_cond_frames_in_attn + m.cfg.max_obj_ptrs_in_encoder - 1);
  int found = 0;
  for (int v : g.inputs) {
    if (g.value(v).name == "memory_maskmem") {
      EXPECT_EQ(g.value(v).dtype, DType::bf16);
      EXPECT_EQ(g.value(v).shape, (Shape{S, m.cfg.d_model, m.cfg.token_grid(), m.cfg.token_grid()}));
      ++found;
    }
    if (g.value(v).name == "obj_ptrs") {
      EXPECT_EQ(g.value(v).shape, (Shape{P, m.cfg.multiplex_count, m.cfg.d_model}));
      ++found;
    }
  }
  EXPECT_EQ(found, 2);
  for (auto& n : g.nodes) EXPECT_EQ(n.domain, "") << n.describe() << " is not a standard ONNX op";
}

TEST(PropagationDecoder, DensePositionEncodingMatchesOfficial) {
  Model& m = model();
  TensorFile f = read_safetensors(kFixture + "/modules/propagation_f001.safetensors");
  Tensor pe = propagation_dense_pe(m.cfg, m.w);
  verify::OutputCheck chk =
      verify::check_output(pe, f.at("in.mask_decoder.image_pe"), verify::Tolerance{0.999999, 1e-5, false, false, 0.99});
  EXPECT_TRUE(chk.pass) << "max_abs " << chk.max_abs;
}

TEST(PropagationDecoder, ParityThroughOurRuntime) {
  Model& m = model();
  ASSERT_EQ(m.cases.size(), 2u);
  for (auto& c : m.cases) expect_case_passes(c, m.session->run(c.inputs), "segmux");
}

TEST(PropagationDecoder, ParityThroughOnnxRuntime) {
  std::string why;
  if (!ort_available(&why)) GTEST_SKIP() << "ONNX Runtime not available: " << why;
  Model& m = model();
  auto peer = verify::OrtPeer::from_bytes(onnx_io::export_onnx_bytes(build_propagation_decoder(m.cfg, m.w)));
  for (auto& c : m.cases) expect_case_passes(c, peer->run(c.inputs), "onnxruntime");
}

// Padded slots must not matter: garbage in every slot marked invalid leaves the outputs unchanged.
TEST(PropagationDecoder, PaddedSlotsAreIgnored) {
  Model& m = model();
  const verify::ParityCase& c = m.cases[0];  // f001: one memory frame, one pointer frame
  auto base = m.session->run(c.inputs);
  auto in = c.inputs;
  Tensor maskmem = in.at("memory_maskmem").clone(), image = in.at("memory_image").clone();
  Tensor ptrs = in.at("obj_ptrs").clone(), tpos = in.at("obj_ptr_tpos").clone();
  const int64_t per_slot = image.numel() / image.dim(0);
  for (int64_t s = 0; s < image.dim(0); ++s) {
    if (in.at("memory_valid").data<float>()[s] != 0.0f) continue;
    for (int64_t i = 0; i < per_slot; ++i) {
      image.data<float>()[s * per_slot + i] = float(std::sin(double(i + s)) * 7.0);
      maskmem.data<uint16_t>()[s * per_slot + i] = f32_to_bf16(float(std::cos(double(i * s)) * 5.0));
    }
  }
  const int64_t per_ptr = ptrs.numel() / ptrs.dim(0);
  for (int64_t p = 0; p < ptrs.dim(0); ++p) {
    if (in.at("obj_ptr_valid").data<float>()[p] != 0.0f) continue;
    for (int64_t i = 0; i < per_ptr; ++i) ptrs.data<float>()[p * per_ptr + i] = float(i % 13) - 6.0f;
    tpos.data<float>()[p] = 0.37f * float(p);
  }
  in["memory_maskmem"] = maskmem;
  in["memory_image"] = image;
  in["obj_ptrs"] = ptrs;
  in["obj_ptr_tpos"] = tpos;
  auto out = m.session->run(in);
  for (auto& [name, t] : base) {
    verify::OutputCheck chk =
        verify::check_output(out.at(name), t, verify::Tolerance{0.9999999, 1e-6, false, false, 0.99});
    EXPECT_TRUE(chk.pass) << name << " changed with padded-slot contents: max_abs " << chk.max_abs;
  }
}

// Without any valid memory frame the official skips the memory attention.
TEST(PropagationDecoder, NoMemoryPassesImageFeaturesThrough) {
  Model& m = model();
  auto in = m.cases[0].inputs;
  in["memory_valid"] = Tensor(DType::f32, in.at("memory_valid").shape());
  in["obj_ptr_valid"] = Tensor(DType::f32, in.at("obj_ptr_valid").shape());
  auto out = m.session->run(in);
  EXPECT_TRUE(out.at("pix_feat_with_mem").identical(in.at("image")));
  for (int64_t i = 0; i < out.at("masks").numel(); ++i)
    ASSERT_TRUE(std::isfinite(out.at("masks").data<float>()[i])) << "non-finite mask logit at " << i;
}

// The production route: compiler passes (folding, fusion, ...) on the graph, then our runtime.
TEST(PropagationDecoder, ParityAfterCompilation) {
  Model& m = model();
  compiler::CompileResult r = compiler::compile_graph(build_propagation_decoder(m.cfg, m.w));
  int attention = 0;
  for (auto& n : r.graph.nodes) attention += n.domain == "segmux" && n.op_type == "Attention";
  // memory attention: self + cross per layer; two-way transformer: 3 per layer + the final one.
  EXPECT_EQ(attention, 2 * m.cfg.mem_attn_layers + 3 * m.cfg.twoway_depth + 1);
  Interpreter s(std::move(r.graph));
  for (auto& c : m.cases) expect_case_passes(c, s.run(c.inputs), "compiled");
}

// A graph with fewer slots (as many as the frame needs) gives the same results as the full one.
TEST(PropagationDecoder, SmallerSlotVariantMatches) {
  Model& m = model();
  TensorFile f = read_safetensors(kFixture + "/modules/propagation_f010.safetensors");
  const int S = m.cfg.num_maskmem, P = m.cfg.max_obj_ptrs_in_encoder;  // 1 cond frame + 6, 10 pointer frames fit
  Interpreter small(build_propagation_decoder_for_slots(m.cfg, m.w, S, P));
  const verify::ParityCase& c = m.cases[1];
  // Re-pack the full-slot inputs into the smaller slots (valid entries come first).
  auto in = c.inputs;
  auto shrink = [](const Tensor& t, int64_t n) {
    Shape sh = t.shape();
    sh[0] = n;
    Tensor out(t.dtype(), sh);
    std::memcpy(out.raw(), t.raw(), out.nbytes());
    return out;
  };
  for (const char* k : {"memory_maskmem", "memory_image", "memory_tpos_index", "memory_valid"})
    in[k] = shrink(in.at(k), S);
  for (const char* k : {"obj_ptrs", "obj_ptr_tpos", "obj_ptr_valid"}) in[k] = shrink(in.at(k), P);
  expect_case_passes(c, small.run(in), "segmux-small-slots");
  EXPECT_THROW(build_propagation_decoder_for_slots(m.cfg, m.w, 0, P), Error);
}
