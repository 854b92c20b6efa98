// The detector with box exemplars against the official code (tests/fixtures/sam31-tiny-prompts,
// modules/detector_exemplar_*.safetensors, EXEMPLARS.md): the geometry encoder's parts and outputs, the
// prompt, fusion memory, decoder, and the raw grounding outputs, for every case the folder holds; the
// final outputs also through the compiled path and ONNX Runtime (run_parity); padding slots change
// nothing; bad boxes are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "core/tensor_ops.h"
#include "io/safetensors.h"
#include "models/sam31/box_exemplars.h"
#include "models/sam31/config.h"
#include "models/sam31/detector.h"
#include "models/sam31/weights.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture.h"
#include "verify/sam31/fixture_config.h"
#include "verify/sam31/parity.h"

namespace segmux::sam31 {
namespace {

const std::string kSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-prompts";
const std::string kWeights = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/weights.safetensors";

void expect_close(const std::string& what, const Tensor& got, const Tensor& ref) {
  verify::OutputCheck c = verify::check_output(got.reshaped(ref.shape()), ref, verify::Tolerance{});
  EXPECT_TRUE(c.pass) << what << ": cosine " << c.cosine << " max_abs " << c.max_abs << " ratio " << c.ratio << " "
                      << c.problem;
}

// The number of boxes of a case (non-padding slots, which come first).
int64_t box_count(const verify::ParityCase& pc) {
  const Tensor& pad = pc.inputs.at("box_padding");
  int64_t n = 0;
  while (n < pad.numel() && !pad.data<bool>()[n]) ++n;
  return n;
}

std::vector<int64_t> iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

struct ExemplarRuns {
  ModelConfig cfg;
  std::vector<verify::ParityCase> cases;
  std::vector<std::map<std::string, Tensor>> outs;
  std::vector<TensorFile> files;
};

const ExemplarRuns& runs() {
  static ExemplarRuns r = [] {
    ExemplarRuns e;
    e.cfg = segmux::verify::load_fixture_config(kSet + "/config.json");
    Weights w = Weights::load(kWeights);
    DetectorOptions o;
    o.debug_outputs = true;
    Interpreter s(build_detector(e.cfg, w, o), InterpreterOptions{1, false});
    e.cases = verify::detector_exemplar_parity_cases(kSet, e.cfg);
    for (const verify::ParityCase& pc : e.cases) {
      e.outs.push_back(s.run(pc.inputs));
      e.files.push_back(read_safetensors(kSet + "/modules/" + pc.label + ".safetensors"));
    }
    return e;
  }();
  return r;
}

TEST(DetectorGeometry, ReadsEveryExemplarCaseOfTheFolder) {
  const auto& r = runs();
  ASSERT_EQ(r.cases.size(), 5u);
  for (const verify::ParityCase& pc : r.cases) {
    EXPECT_GE(box_count(pc), 1) << pc.label;
    EXPECT_TRUE(pc.expected.count("pred_masks")) << pc.label << ": levels 0/1 of the frame were not found";
  }
}

TEST(DetectorGeometry, BoxTokensPoolingAndPositionEncoding) {
  const auto& r = runs();
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const auto& out = r.outs[i];
    const auto& f = r.files[i];
    const int64_t n = box_count(r.cases[i]), N = r.cfg.detector_max_boxes;
    const std::string l = r.cases[i].label + ": ";
    expect_close(l + "roi_align", take(out.at("dbg_geometry_roi_align"), 0, 0, n),
                 verify::fixture_tensor(f, "call.geometry_encoder.boxes_pool_project.args.0"));
    expect_close(l + "pos_enc", take(out.at("dbg_geometry_box_pos_enc"), 0, 0, n),
                 verify::fixture_tensor(f, "call.geometry_encoder.boxes_pos_enc_project.args.0"));
    expect_close(l + "box tokens", take(out.at("dbg_geometry_box_tokens"), 0, 0, n),
                 take(verify::fixture_tensor(f, "call.geometry_encoder.final_proj.args.0"), 0, 0, n));
    // Encoder output: the n boxes then the CLS token (our slot N).
    std::vector<int64_t> rows = iota(0, n);
    rows.push_back(N);
    expect_close(l + "geometry", take_indices(out.at("dbg_geometry"), 0, rows),
                 verify::fixture_tensor(f, "call.geometry_encoder.encode_norm.out"));
  }
}

TEST(DetectorGeometry, PromptMemoryDecoderAndScores) {
  const auto& r = runs();
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const auto& out = r.outs[i];
    const auto& f = r.files[i];
    const int64_t n = box_count(r.cases[i]), N = r.cfg.detector_max_boxes, T = r.cfg.text_context_length;
    const std::string l = r.cases[i].label + ": ";
    std::vector<int64_t> rows = iota(0, T + n);
    rows.push_back(T + N);
    expect_close(l + "prompt", take_indices(out.at("dbg_prompt"), 0, rows),
                 verify::fixture_tensor(f, "call.fusion_encoder.kwargs.prompt"));
    expect_close(l + "memory", out.at("dbg_memory"), verify::fixture_tensor(f, "call.fusion_encoder.out.memory"));
    expect_close(l + "hs", out.at("dbg_hs"), verify::fixture_tensor(f, "call.decoder.out.0"));
    expect_close(l + "refs", out.at("dbg_refs"), verify::fixture_tensor(f, "call.decoder.out.1"));
    expect_close(l + "presence", out.at("dbg_presence_layers"), verify::fixture_tensor(f, "call.decoder.out.2"));
    const Tensor& scores = verify::fixture_tensor(f, "call.dot_prod_scoring.out");
    expect_close(l + "scores", out.at("dbg_class_logits"), take(scores, 0, scores.dim(0) - 1, 1));
  }
}

TEST(DetectorGeometry, RawGroundingOutputs) {
  const auto& r = runs();
  for (size_t i = 0; i < r.cases.size(); ++i)
    for (auto& [name, ref] : r.cases[i].expected) expect_close(r.cases[i].label + ": " + name, r.outs[i].at(name), ref);
}

// The negative box changes the grounding (the cases are not all the same run).
TEST(DetectorGeometry, CasesDiffer) {
  const auto& r = runs();
  for (size_t i = 1; i < r.cases.size(); ++i) {
    verify::OutputCheck c =
        verify::check_output(r.outs[i].at("pred_logits"), r.outs[0].at("pred_logits"), verify::Tolerance{});
    EXPECT_FALSE(c.pass) << r.cases[i].label << " equals " << r.cases[0].label;
  }
}

// The deployed paths: compiled (passes + plan + executor) and the exported ONNX on ONNX Runtime.
TEST(DetectorGeometry, CompiledAndOnnxRuntimeAtParity) {
  verify::ParityOptions o;
  o.fixture_dir = kSet;
  o.weights_files = {kWeights};
  o.candidates = {"detector"};
  o.reference = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> backends, labels;
  for (auto& row : r.rows) {
    backends.insert(row.backend);
    labels.insert(row.case_label);
  }
  EXPECT_TRUE(backends.count("compiled")) << log.str();
  EXPECT_EQ(labels.size(), 5u) << log.str();
  // ONNX Runtime ran unless the parity run says why not (third_party/ort absent).
  if (r.notes.empty()) {
    EXPECT_TRUE(backends.count("onnxruntime")) << log.str();
  }
  for (auto& n : r.notes) std::cout << "note: " << n << "\n";
}

// Where the padding slots sit and what they hold changes nothing: a case with its boxes moved to
// other slots and garbage in the empty ones gives the same outputs.
TEST(DetectorGeometry, PaddingSlotsAreIgnored) {
  const auto& r = runs();
  Weights w = Weights::load(kWeights);
  Interpreter s(build_detector(r.cfg, w), InterpreterOptions{1, false});
  const verify::ParityCase& pc = r.cases.back();
  const int64_t n = box_count(pc), N = r.cfg.detector_max_boxes;
  ASSERT_LT(n, N);
  auto in = pc.inputs;
  Tensor boxes = in.at("box_padding").clone(), coords = in.at("boxes").clone(), labels = in.at("box_labels").clone();
  for (int64_t k = 0; k < N; ++k) {  // garbage everywhere, then the real boxes at the end
    boxes.data<bool>()[k] = true;
    for (int c = 0; c < 4; ++c) coords.data<float>()[k * 4 + c] = 0.25f * float(c + 1);
    labels.data<int64_t>()[k] = 1;
  }
  for (int64_t k = 0; k < n; ++k) {
    const int64_t dst = N - n + k;
    boxes.data<bool>()[dst] = false;
    for (int c = 0; c < 4; ++c) coords.data<float>()[dst * 4 + c] = pc.inputs.at("boxes").data<float>()[k * 4 + c];
    labels.data<int64_t>()[dst] = pc.inputs.at("box_labels").data<int64_t>()[k];
  }
  in["box_padding"] = boxes;
  in["boxes"] = coords;
  in["box_labels"] = labels;
  auto out = s.run(in);
  for (auto& [name, ref] : pc.expected) expect_close("moved " + name, out.at(name), ref);
}

TEST(DetectorGeometry, BadBoxesAreRefused) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kSet + "/config.json");
  auto bad = [&](BoxExemplar e) { EXPECT_THROW(detector_box_inputs(cfg, {e}), Error); };
  bad(box_exemplar_from_xywh(0.1, 0.1, 0.0, 0.2, true));    // empty
  bad(box_exemplar_from_xywh(0.1, 0.1, 0.2, -0.1, true));   // negative height
  bad(box_exemplar_from_xywh(0.9, 0.1, 0.2, 0.2, true));    // past the right edge
  bad(box_exemplar_from_xywh(-0.1, 0.1, 0.2, 0.2, false));  // left of the frame
  bad(box_exemplar_from_xywh(0.1, 0.1, 0.2, std::nan(""), true));
  std::vector<BoxExemplar> many(size_t(cfg.detector_max_boxes) + 1, box_exemplar_from_xywh(0.1, 0.1, 0.2, 0.2, true));
  EXPECT_THROW(detector_box_inputs(cfg, many), Error);
  EXPECT_NO_THROW(detector_box_inputs(cfg, {box_exemplar_from_xywh(0, 0, 1, 1, true)}));  // the whole frame
  auto ok = detector_box_inputs(cfg, {box_exemplar_from_xywh(0.25, 0.5, 0.5, 0.25, false)});
  EXPECT_FLOAT_EQ(ok.at("boxes").data<float>()[0], 0.5f);    // cx
  EXPECT_FLOAT_EQ(ok.at("boxes").data<float>()[1], 0.625f);  // cy
  EXPECT_EQ(ok.at("box_labels").data<int64_t>()[0], 0);
  EXPECT_FALSE(ok.at("box_padding").data<bool>()[0]);
  EXPECT_TRUE(ok.at("box_padding").data<bool>()[1]);
}

}  // namespace
}  // namespace segmux::sam31
