// Parity cases of the detector with box exemplars: one per modules/detector_exemplar_<case>.safetensors
// (tests/fixtures/sam31-tiny-prompts/EXEMPLARS.md). Each file holds the official grounding's inputs
// as its module calls saw them: level-2 features and their position encoding (fusion encoder src /
// src_pos), the prompt (text tokens first: the text slot of the batch), the boxes given to the
// geometry encoder; and the raw forward_grounding outputs.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/tensor_ops.h"
#include "io/safetensors.h"
#include "models/sam31/box_exemplars.h"
#include "models/sam31/detector.h"
#include "models/sam31/tensor_names.h"
#include "verify/compare.h"
#include "verify/sam31/fixture.h"
#include "verify/sam31/parity_cases.h"

namespace segmux::verify {

using namespace segmux::sam31;

namespace {

namespace fs = std::filesystem;
namespace det = names::detector;

// The same frame's features from two official runs agree to float rounding (~1e-6 relative, not
// bit for bit); another frame's differ by far more.
bool same_frame(const Tensor& a, const Tensor& b) {
  double scale = 0;
  const Tensor ref = as_f32(b);
  for (int64_t i = 0; i < ref.numel(); ++i) scale = std::max(scale, std::abs(double(ref.data<float>()[i])));
  return compare_tensors(a, b).max_abs <= 1e-5 * std::max(1.0, scale);
}

// Levels 0/1 of the grounded frame (they reach only the segmentation head) are not in the case files:
// EXEMPLARS.md says the features are those of the model folder's backbone fixture (frame 0). That file
// is the folder's own modules/backbone.safetensors or the one beside the weights the folder links to;
// it is used only when its level 2 is the case's (same_frame). Empty when there is none.
TensorFile matching_backbone(const std::string& fixture_dir, const Tensor& level2) {
  std::vector<fs::path> candidates = {fs::path(fixture_dir) / "modules" / "backbone.safetensors"};
  std::error_code ec;
  const fs::path weights = fs::canonical(fs::path(fixture_dir) / "weights.safetensors", ec);
  if (!ec) candidates.push_back(weights.parent_path() / "modules" / "backbone.safetensors");
  for (const fs::path& p : candidates) {
    if (!fs::exists(p, ec)) continue;
    TensorFile bb = read_safetensors(p.string());
    if (!bb.has("out.det.fpn2") || bb.at("out.det.fpn2").shape() != level2.shape()) continue;
    if (same_frame(bb.at("out.det.fpn2"), level2)) return bb;
  }
  return {};
}

ParityCase exemplar_case(const std::string& fixture_dir, const std::string& label, const ModelConfig& cfg) {
  TensorFile f = read_safetensors(fixture_dir + "/modules/" + label + ".safetensors");
  const int64_t T = cfg.text_context_length, D = cfg.d_model, num_texts = DetectorOptions{}.num_texts;
  ParityCase c;
  c.label = label;
  const Tensor& level2 = fixture_tensor(f, "call.fusion_encoder.kwargs.src.0");
  c.inputs[det::fpn(2)] = level2;
  c.inputs[det::kPos2] = fixture_tensor(f, "call.fusion_encoder.kwargs.src_pos.0");
  TensorFile bb = matching_backbone(fixture_dir, level2);
  for (int lvl = 0; lvl < 2; ++lvl) {
    const std::string key = "out.det.fpn" + std::to_string(lvl);
    if (bb.has(key)) {
      c.inputs[det::fpn(lvl)] = bb.at(key);
    } else {
      const int64_t n = cfg.neck_levels()[size_t(lvl)];
      c.inputs[det::fpn(lvl)] = Tensor(DType::f32, {1, D, n, n});
    }
  }
  // The text slot grounded (text_ids 0): the prompt's first T tokens and their padding mask. The
  // other slots of the batch are not read (copies of it).
  const Tensor& prompt = fixture_tensor(f, "call.fusion_encoder.kwargs.prompt");                        // S,1,D
  const Tensor& prompt_mask = fixture_tensor(f, "call.fusion_encoder.kwargs.prompt_key_padding_mask");  // 1,S
  const Tensor txt = take(prompt, 0, 0, T), txt_mask = take(prompt_mask, 1, 0, T);
  const std::vector<int64_t> slot0(size_t(num_texts), 0);
  c.inputs[det::kLanguageFeatures] = take_indices(txt, 1, slot0);
  c.inputs[det::kLanguageMask] = take_indices(txt_mask, 0, slot0);
  c.inputs[det::kTextIds] = Tensor::from_vector<int64_t>({1}, {0});

  // The boxes as the geometry encoder got them: (n,1,4) cxcywh, labels (n,1), mask (1,n).
  const Tensor& boxes = fixture_tensor(f, "call.geometry_encoder.kwargs.geo_prompt.box_embeddings");
  const Tensor& labels = fixture_tensor(f, "call.geometry_encoder.kwargs.geo_prompt.box_labels");
  const Tensor& mask = fixture_tensor(f, "call.geometry_encoder.kwargs.geo_prompt.box_mask");
  const int64_t n = boxes.dim(0), N = cfg.detector_max_boxes;
  SEGMUX_CHECK(boxes.dim(1) == 1, label, ": box batch ", boxes.dim(1), ", expected 1");
  SEGMUX_CHECK(n <= N, label, ": ", n, " boxes, more than detector_max_boxes ", N);
  std::map<std::string, Tensor> in = detector_box_inputs(cfg, {});
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) in[det::kBoxes].data<float>()[i * 4 + k] = float(boxes.get_as_double(i * 4 + k));
    in[det::kBoxLabels].data<int64_t>()[i] = int64_t(labels.get_as_double(i));
    in[det::kBoxPadding].data<bool>()[i] = mask.get_as_double(i) != 0;
  }
  for (auto& [name, t] : in) c.inputs[name] = t;

  for (const char* name : {"pred_logits", "pred_boxes", "pred_boxes_xyxy", "presence_logit_dec", "queries"})
    c.expected[name] = fixture_tensor(f, std::string("raw.") + name);
  if (!bb.tensors.empty()) {
    c.expected[det::kPredMasks] = fixture_tensor(f, "raw.pred_masks");
    c.expected[det::kSemanticSeg] = fixture_tensor(f, "raw.semantic_seg");
  }
  return c;
}

}  // namespace

std::vector<ParityCase> detector_exemplar_parity_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  std::vector<ParityCase> cases;
  for (const std::string& label : fixture_modules(fixture_dir, "detector_exemplar_"))
    cases.push_back(exemplar_case(fixture_dir, label, cfg));
  return cases;
}

}  // namespace segmux::verify
