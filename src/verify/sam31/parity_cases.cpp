#include "verify/sam31/parity_cases.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/tensor_ops.h"
#include "io/json_limits.h"
#include "io/safetensors.h"
#include "ir/builder.h"
#include "models/sam31/backbone.h"
#include "models/sam31/box_exemplars.h"
#include "models/sam31/bucket_batch.h"
#include "models/sam31/detector.h"
#include "models/sam31/memory_encoder.h"
#include "models/sam31/point_decoder.h"
#include "models/sam31/tensor_names.h"
#include "models/sam31/text_encoder.h"
#include "models/sam31/tracker_io.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture.h"

namespace segmux::verify {

using namespace segmux::sam31;

std::vector<std::string> fixture_modules(const std::string& fixture_dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(fixture_dir) / "modules";
  std::vector<std::string> labels;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() == ".safetensors" && file.rfind(prefix, 0) == 0)
      labels.push_back(e.path().stem().string());
  }
  SEGMUX_CHECK(!ec, "cannot list fixture folder '", dir.string(), "': ", ec.message());
  SEGMUX_CHECK(!labels.empty(), "fixture folder '", dir.string(), "' has no ", prefix, "*.safetensors");
  std::sort(labels.begin(), labels.end());
  return labels;
}

bool has_fixture_modules(const std::string& fixture_dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(fixture_dir) / "modules", ec)) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() == ".safetensors" && file.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

namespace {

// The raw per-frame tensors of the prompted frame (video/raw_frame_NNN_add_prompt.safetensors): the one
// file of that form the folder holds, whatever frame was prompted.
std::string add_prompt_frame_file(const std::string& fixture_dir) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(fixture_dir) / "video";
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    const std::string tail = "_add_prompt.safetensors";
    if (f.rfind("raw_frame_", 0) == 0 && f.size() > tail.size() && f.ends_with(tail))
      found.push_back(e.path().string());
  }
  SEGMUX_CHECK(!ec, "cannot list fixture folder '", dir.string(), "': ", ec.message());
  SEGMUX_CHECK(found.size() == 1, "fixture folder '", dir.string(), "' holds ", found.size(),
               " raw_frame_*_add_prompt.safetensors files, expected one");
  return found[0];
}

// The tracker candidates (propagation decoder, memory encoder) run bf16 parts as the official code
// does: cosine 0.9999 and max abs 2e-2 * max(1, max|ref|); masks also need IoU >= 0.99.
Tolerance tracker_tolerance(bool is_mask) {
  Tolerance t;
  t.min_cosine = 0.9999;
  t.max_abs_over_scale = 2e-2;
  t.scale_is_max_ref = false;  // 2e-2 * max(1, max|ref|)
  t.check_mask_iou = is_mask;
  t.min_mask_iou = 0.99;
  return t;
}

}  // namespace

// ---- text_encoder ------------------------------------------------------------------------------

std::vector<ParityCase> text_encoder_parity_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  TensorFile f = read_safetensors(fixture_dir + "/modules/text_encoder.safetensors");
  const Tensor& ids = f.at("in.token_ids");
  const int64_t n = ids.dim(0);
  const int batch = TextEncoderOptions{}.batch;
  SEGMUX_CHECK(n >= batch, "text_encoder fixture has ", n, " prompts, fewer than the batch ", batch);
  std::vector<ParityCase> cases;
  // Windows of `batch` consecutive prompts that together cover every prompt.
  std::vector<int64_t> starts;
  for (int64_t s = 0; s + batch <= n; s += batch) starts.push_back(s);
  if (starts.back() + batch < n) starts.push_back(n - batch);
  for (int64_t s : starts) {
    ParityCase c;
    c.label = "prompts " + std::to_string(s) + ".." + std::to_string(s + batch - 1);
    c.inputs[names::text_encoder::kTokenIds] = take(ids, 0, s, batch);
    c.expected[names::text_encoder::kLanguageFeatures] = take(f.at("out.language_features"), 1, s, batch);
    c.expected[names::text_encoder::kLanguageMask] = take(f.at("out.language_mask"), 0, s, batch);
    c.expected[names::text_encoder::kLanguageEmbeds] = take(f.at("out.language_embeds"), 1, s, batch);
    cases.push_back(std::move(c));
  }
  (void)cfg;
  return cases;
}

// ---- backbone ----------------------------------------------------------------------------------

std::vector<ParityCase> backbone_parity_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  TensorFile f = read_safetensors(fixture_dir + "/modules/backbone.safetensors");
  ParityCase c;
  c.label = "frame 0";
  c.inputs[names::backbone::kImage] = f.at("in.image");
  c.expected[names::backbone::kVitTrunk] = f.at("out.vit_trunk");
  for (int head = 0; head < 3; ++head)
    for (int lvl = 0; lvl < 3; ++lvl) {
      const std::string key = std::string(names::backbone::kHeads[head]) + ".fpn" + std::to_string(lvl);
      c.expected[names::backbone::fpn(names::backbone::Head(head), lvl)] = f.at("out." + key);
    }
  for (int lvl = 0; lvl < 3; ++lvl) c.expected[names::backbone::pos(lvl)] = f.at("out.pos" + std::to_string(lvl));
  std::vector<ParityCase> cases;
  cases.push_back(c);
  ParityCase v;
  v.label = "frame 0, fp32 MLP";
  v.variant = kBackboneFp32MlpVariant;
  v.inputs[names::backbone::kImage] = f.at("in.image");
  v.expected[names::backbone::kVitTrunk] = f.at("variant_fp32_mlp.out.vit_trunk");
  cases.push_back(v);
  (void)cfg;
  return cases;
}

// ---- detector ----------------------------------------------------------------------------------

namespace {

std::vector<ParityCase> detector_text_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  // Two official groundings are stored:
  // - frame 0 (add_prompt pass): its image features are modules/backbone.safetensors out.det.*; its
  //   outputs are the raw per-frame tensors video/raw_frame_000_add_prompt.safetensors (pre-NMS logits,
  //   presence, boxes, and the mask logits of the candidate queries);
  // - modules/detector.safetensors: the grounding module's own inputs and outputs. Its level-2
  //   features are those of frame 1 (its logits equal raw_frame_001's), not of the backbone fixture's
  //   frame 0; levels 0/1 of that frame are not stored, so the case feeds frame 0's levels 0/1 (they
  //   reach only the segmentation head) and compares the outputs that do not depend on them.
  TensorFile bb = read_safetensors(fixture_dir + "/modules/backbone.safetensors");
  TensorFile f = read_safetensors(fixture_dir + "/modules/detector.safetensors");
  TensorFile raw = read_safetensors(add_prompt_frame_file(fixture_dir));
  const int64_t Q = cfg.num_queries, G = cfg.token_grid();
  std::vector<ParityCase> cases;

  ParityCase a;
  a.label = "frame 0 (add_prompt)";
  for (int lvl = 0; lvl < 3; ++lvl) a.inputs[names::detector::fpn(lvl)] = bb.at("out.det.fpn" + std::to_string(lvl));
  a.inputs[names::detector::kPos2] = bb.at("out.pos2");
  a.inputs[names::detector::kLanguageFeatures] = f.at("in.language_features");
  a.inputs[names::detector::kLanguageMask] = f.at("in.language_mask");
  a.inputs[names::detector::kTextIds] = Tensor::from_vector<int64_t>({1}, {0});
  for (auto& [name, t] : detector_box_inputs(cfg, {})) a.inputs[name] = t;  // text only: no box
  a.expected[names::detector::kPredLogits] = raw.at("grounding_pred_logits_preNMS").reshaped({1, Q, 1});
  a.expected[names::detector::kPresenceLogit] = raw.at("grounding_presence_logit").reshaped({1, 1});
  a.expected[names::detector::kPredBoxesXyxy] = raw.at("det_boxes_xyxy").reshaped({1, Q, 4});
  const Tensor& cq = raw.at("det_candidate_queries");
  const Tensor& cm = raw.at("det_candidate_mask_logits");
  OutputSelection sel;
  sel.axis = 1;
  for (int64_t i = 0; i < cq.numel(); ++i) sel.indices.push_back(int64_t(cq.get_as_double(i)));
  a.select[names::detector::kPredMasks] = sel;
  a.expected[names::detector::kPredMasks] = cm.reshaped({1, cm.dim(0), cm.dim(1), cm.dim(2)});
  cases.push_back(std::move(a));

  ParityCase m;
  m.label = "detector module (frame 1)";
  m.inputs = cases[0].inputs;
  auto to_nchw = [&](const Tensor& seq) {  // (HW,B,D) -> (B,D,g,g)
    return permute(seq, {1, 2, 0}).reshaped({seq.dim(1), seq.dim(2), G, G});
  };
  m.inputs[names::detector::fpn(2)] = to_nchw(f.at("call.geometry_encoder.kwargs.img_feats.0"));
  m.inputs[names::detector::kPos2] = to_nchw(f.at("call.geometry_encoder.kwargs.img_pos_embeds.0"));
  namespace det = names::detector;
  for (const char* name : {det::kPredLogits, det::kPredBoxes, det::kPredBoxesXyxy, det::kPresenceLogit, det::kQueries})
    m.expected[name] = fixture_tensor(f, std::string("out.") + name);
  cases.push_back(std::move(m));
  return cases;
}

}  // namespace

std::vector<ParityCase> detector_parity_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  std::vector<ParityCase> cases;
  if (std::filesystem::exists(fixture_dir + "/modules/detector.safetensors"))
    cases = detector_text_cases(fixture_dir, cfg);
  const bool has_exemplars = has_fixture_modules(fixture_dir, "detector_exemplar_");
  SEGMUX_CHECK(!cases.empty() || has_exemplars, "fixture folder '", fixture_dir,
               "' has neither modules/detector.safetensors nor modules/detector_exemplar_*.safetensors");
  if (has_exemplars)
    for (ParityCase& c : detector_exemplar_parity_cases(fixture_dir, cfg)) cases.push_back(std::move(c));
  return cases;
}

// ---- interactive_decoder -----------------------------------------------------------------------

namespace {

// Detector mask logits (K, h, w) -> binary masks at `size` (bilinear, align_corners=False, > 0), as the
// control plane prepares new-object masks; computed with our own Resize kernel.
Tensor upsample_binarize(const Tensor& logits, int64_t size) {
  ir::Graph g;
  ir::GraphBuilder b(g);
  const int64_t k = logits.dim(0), h = logits.dim(1), w = logits.dim(2);
  int x = b.input("x", DType::f32, {1, k, h, w});
  int empty = b.constant(Tensor(DType::f32, {0}), "roi");
  int y = b.op1("Resize", {x, empty, empty, b.ints({1, k, size, size})},
                {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel")}});
  y = b.op1("Cast", {b.op1("Greater", {y, b.scalar_f32(0.0f)})}, {{"to", int64_t(1)}});
  b.output(y, "y");
  Interpreter s(std::move(g), InterpreterOptions{1, false});
  return s.run({{"x", logits.reshaped({1, k, h, w})}}).at("y");
}

}  // namespace

std::vector<ParityCase> interactive_decoder_parity_cases(const std::string& dir, const ModelConfig& cfg) {
  // Frame 0, add_prompt: the three new objects' detector masks through the mask-as-output path.
  TensorFile raw = read_safetensors(add_prompt_frame_file(dir));
  TensorFile bb = read_safetensors(dir + "/modules/backbone.safetensors");
  const Tensor& order = raw.at("det_order");
  const Tensor& keep = raw.at("det_keep");
  const Tensor& cand = raw.at("det_candidate_queries");
  const Tensor& cand_masks = raw.at("det_candidate_mask_logits");
  const Tensor& ptr = raw.at("tracker_step0.interactive.obj_ptr");
  const Tensor& sam_scores = raw.at("tracker_step0.interactive.object_score_logits");
  std::vector<ParityCase> cases;
  int64_t obj = 0;
  for (int64_t i = 0; i < order.numel() && obj < ptr.dim(0); ++i) {
    int64_t q = order.data<int64_t>()[i];
    if (!keep.data<bool>()[q]) break;  // kept detections come first in det_order
    int64_t row = -1;
    for (int64_t c = 0; c < cand.numel(); ++c)
      if (cand.data<int64_t>()[c] == q) row = c;
    SEGMUX_CHECK(row >= 0, "fixture: kept query ", q, " has no candidate mask");
    Tensor logits = take(cand_masks, 0, row, 1);
    ParityCase c;
    c.label = "add_prompt_f000_obj" + std::to_string(obj);
    c.inputs[names::interactive_decoder::kImage] = bb.at("out.interactive.fpn2").clone();
    c.inputs[names::interactive_decoder::kMask] = upsample_binarize(logits, cfg.input_mask_size());
    c.expected[names::interactive_decoder::kObjPtr] = take(ptr, 0, obj, 1);
    c.expected[names::interactive_decoder::kSamObjectScoreLogit] = take(sam_scores, 0, obj, 1);
    cases.push_back(std::move(c));
    ++obj;
  }
  SEGMUX_CHECK(obj == ptr.dim(0), "fixture: found ", obj, " new-object masks for ", ptr.dim(0), " pointers");
  return cases;
}

// ---- point_decoder -----------------------------------------------------------------------------

PointPrompt point_decoder_fixture_prompt(const TensorFile& f) {
  const Tensor& xy = fixture_tensor(f, "call.interactive_sam_prompt_encoder.kwargs.points.0");
  const Tensor& labels = fixture_tensor(f, "call.interactive_sam_prompt_encoder.kwargs.points.1");
  SEGMUX_CHECK(xy.rank() == 3 && xy.dim(0) == 1 && xy.dim(2) == 2 && labels.numel() == xy.dim(1),
               "fixture: point prompt of shape ", shape_str(xy.shape()), " with ", labels.numel(), " labels");
  PointPrompt p;
  for (int64_t i = 0; i < xy.numel(); ++i) p.xy.push_back(float(xy.get_as_double(i)));
  for (int64_t i = 0; i < labels.numel(); ++i) p.labels.push_back(int64_t(labels.get_as_double(i)));
  return p;
}

std::vector<ParityCase> point_decoder_parity_cases(const std::string& dir, const ModelConfig& cfg) {
  namespace fs = std::filesystem;
  std::vector<ParityCase> cases;
  if (!fs::is_directory(fs::path(dir) / "modules")) return cases;
  bool any = false;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "modules"))
    any = any || e.path().filename().string().rfind("interactive_", 0) == 0;
  if (!any) return cases;  // a fixture set without point prompts (e.g. sam31-tiny)
  for (const std::string& label : fixture_modules(dir, "interactive_")) {
    TensorFile f = read_safetensors(dir + "/modules/" + label + ".safetensors");
    const std::string k = "call.interactive_sam_mask_decoder.";
    ParityCase c;
    c.label = label;
    c.variant = kPointDecoderFeaturesVariant;
    c.inputs[names::point_decoder::kImageEmbeddings] = fixture_tensor(f, k + "kwargs.image_embeddings").clone();
    c.inputs[names::point_decoder::kHighResS0] = fixture_tensor(f, k + "kwargs.high_res_features.0").clone();
    c.inputs[names::point_decoder::kHighResS1] = fixture_tensor(f, k + "kwargs.high_res_features.1").clone();
    PointDecoderPromptInputs in = point_decoder_prompt_inputs(cfg, point_decoder_fixture_prompt(f));
    const bool multimask = fixture_meta(f, "call_meta." + k + "kwargs.multimask_output", label) == "true";
    in.multimask.data<float>()[0] = multimask ? 1.0f : 0.0f;  // as recorded (tests check our decision)
    c.inputs[names::point_decoder::kPointCoords] = in.coords;
    c.inputs[names::point_decoder::kPointLabels] = in.labels;
    c.inputs[names::point_decoder::kPointValid] = in.valid;
    c.inputs[names::point_decoder::kMultimask] = in.multimask;
    const Tensor& masks = fixture_tensor(f, k + "out.0");
    const Tensor& ious = fixture_tensor(f, k + "out.1");
    if (multimask) {  // the decoder returns tokens 1..; ours holds every token
      std::vector<int64_t> multi;
      for (int64_t i = 1; i <= cfg.num_multimask_outputs; ++i) multi.push_back(i);
      c.expected[names::point_decoder::kMasks] = masks.clone();
      c.expected[names::point_decoder::kIouPred] = ious.clone();
      c.select[names::point_decoder::kMasks] = {1, multi};
      c.select[names::point_decoder::kIouPred] = {1, multi};
    } else {  // single mask, possibly the stability fallback
      c.expected[names::point_decoder::kMask] = masks.clone();
      c.expected[names::point_decoder::kIou] = ious.clone();
    }
    c.expected[names::point_decoder::kObjectScoreLogit] = fixture_tensor(f, k + "out.3").clone();
    c.expected[names::point_decoder::kLowResMask] =
        fixture_tensor(f, "call.forward_sam_heads.out.low_res_masks").clone();
    c.expected[names::point_decoder::kObjPtr] = fixture_tensor(f, "call.forward_sam_heads.out.obj_ptr").clone();
    // The interactive head runs in fp32 in the official code: the detector-side bar, plus mask IoU.
    for (auto& [name, t] : c.expected) {
      Tolerance tol;
      namespace pt = names::point_decoder;
      tol.check_mask_iou = name == pt::kMasks || name == pt::kMask || name == pt::kLowResMask;
      c.tolerance[name] = tol;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---- per-bucket slices ---------------------------------------------------------------------------

namespace {

// Bucket b's row of an official tensor batched over a state's buckets along `axis` ((..., buckets, ...)
// -> (..., 1, ...)): an official call carries every bucket of the state at once, the candidates run one
// bucket. A tensor with one row there is every bucket's (returned as is).
Tensor bucket_row(const Tensor& t, int axis, int bucket, const std::string& what) {
  const int64_t n = t.dim(axis);
  if (n == 1) return t;
  SEGMUX_CHECK(bucket < n, what, ": ", n, " rows along axis ", axis, ", no row for bucket ", bucket);
  Shape shape = t.shape();
  shape[size_t(axis)] = 1;
  Tensor out(t.dtype(), shape);
  int64_t outer = 1, inner = int64_t(dtype_size(t.dtype()));
  for (int i = 0; i < axis; ++i) outer *= t.dim(i);
  for (int i = axis + 1; i < t.rank(); ++i) inner *= t.dim(i);
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * inner, src + (o * n + bucket) * inner, size_t(inner));
  return out;
}

// The case label of bucket b: the file's label when the state has one bucket, else "<label>_bucket<b>".
std::string bucket_label(const std::string& label, const MultiplexAssignment& a, int bucket) {
  return a.num_buckets() == 1 ? label : label + "_bucket" + std::to_string(bucket);
}

// The official call as recorded: every bucket of the state in one call of the candidate's bucket variant
// (bucket_batch.h), compared with the official batched tensors (the per-bucket cases' expected rows,
// stacked back along axis 0). Nothing when the call had one bucket.
void add_batched_case(std::vector<ParityCase>& cases, size_t first, const std::string& label, CandidateId id) {
  const size_t buckets = cases.size() - first;
  if (buckets < 2) return;
  ParityCase c;
  c.label = label + "_batch" + std::to_string(buckets);
  c.variant = bucket_variant(cases[first].variant, int(buckets));
  std::vector<std::map<std::string, Tensor>> inputs, expected;
  for (size_t k = first; k < cases.size(); ++k) {
    inputs.push_back(cases[k].inputs);
    expected.push_back(cases[k].expected);
  }
  c.inputs = stack_bucket_inputs(inputs, per_bucket_inputs(id), /*check_shared=*/true);
  std::vector<std::string> all_outputs;
  for (const auto& [name, t] : expected[0]) all_outputs.push_back(name);
  c.expected = stack_bucket_inputs(expected, all_outputs);
  c.tolerance = cases[first].tolerance;
  cases.push_back(std::move(c));
}

}  // namespace

// ---- memory_encoder ----------------------------------------------------------------------------

namespace {

ParityCase memory_encoder_case(const TensorFile& f, const std::string& label, const ModelConfig& cfg,
                               const MultiplexAssignment& assignment, int bucket) {
  std::set<int> cond;
  for (auto& v : parse_untrusted_json(fixture_meta(f, "conditioning_objects", label), label + " conditioning_objects"))
    cond.insert(v.get<int>());
  const Tensor& masks = fixture_tensor(f, "in.pred_masks_high_res");
  ParityCase c;
  c.label = bucket_label(label, assignment, bucket);
  const Tensor pix_feat = bucket_row(fixture_tensor(f, "in.maskmem_backbone.pix_feat"), 0, bucket, label + " pix_feat");
  c.inputs = assemble_memory_encoder_inputs(cfg, assignment, bucket, pix_feat, masks,
                                            fixture_tensor(f, "in.object_score_logits"), cond);
  if (masks.dim(2) != cfg.input_mask_size()) {
    SEGMUX_CHECK(masks.dim(2) == cfg.image_size, label, ": masks of size ", masks.dim(2),
                 " are neither input_mask_size nor image_size");
    c.variant = kMemoryEncoderImageSizeVariant;
  }
  c.expected[names::memory_encoder::kMaskmemFeatures] =
      bucket_row(fixture_tensor(f, "out.maskmem_features"), 0, bucket, label);
  c.expected[names::memory_encoder::kMaskmemFeaturesBf16] =
      bucket_row(fixture_tensor(f, "out.run_memory_encoder.0"), 0, bucket, label);
  for (auto& [name, t] : c.expected) {
    c.tolerance[name] = tracker_tolerance(false);
  }
  return c;
}

}  // namespace

std::vector<ParityCase> memory_encoder_parity_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  std::vector<ParityCase> cases;
  for (const std::string& label : fixture_modules(fixture_dir, "memory_encoder_")) {
    TensorFile f = read_safetensors(fixture_dir + "/modules/" + label + ".safetensors");
    const MultiplexAssignment assignment = parse_multiplex_state(fixture_meta(f, "multiplex_state", label));
    const size_t first = cases.size();
    for (int b = 0; b < assignment.num_buckets(); ++b)
      cases.push_back(memory_encoder_case(f, label, cfg, assignment, b));
    add_batched_case(cases, first, label, CandidateId::memory_encoder);
  }
  return cases;
}

// ---- propagation_decoder -----------------------------------------------------------------------

namespace {

ParityCase propagation_case(const TensorFile& f, const std::string& label, const ModelConfig& cfg,
                            const MultiplexAssignment& assignment, int bucket) {
  const int64_t g = cfg.token_grid(), M = cfg.multiplex_count, D = cfg.d_model;
  const int frame_idx = std::stoi(fixture_meta(f, "frame_idx", label));
  const int num_frames = std::stoi(fixture_meta(f, "num_frames", label));

  MemoryBank bank;
  auto frames = parse_untrusted_json(fixture_meta(f, "memory_bank_frames", label), label + " memory_bank_frames");
  for (auto& [kind, list] : frames.items()) {
    SEGMUX_CHECK(kind == "cond_frame_outputs" || kind == "non_cond_frame_outputs", label, ": unknown bank kind ", kind);
    for (auto& t : list) {
      const int fi = t.get<int>();
      char tag[16];
      std::snprintf(tag, sizeof(tag), "f%03d", fi);
      const std::string p = "in.memory_bank." + kind + "." + tag + ".";
      StoredFrame sf;
      sf.maskmem_features = fixture_tensor(f, p + "maskmem_features");
      sf.image_features = seq_first_to_nchw(bucket_row(fixture_tensor(f, p + "image_features"), 1, bucket, p), g);
      sf.obj_ptr = fixture_tensor(f, p + "obj_ptr");
      (kind == "cond_frame_outputs" ? bank.cond_frames : bank.non_cond_frames)[fi] = sf;
    }
  }
  CurrentFrameFeatures feats;
  auto row = [&](const std::string& name, int axis) { return bucket_row(fixture_tensor(f, name), axis, bucket, name); };
  feats.image = seq_first_to_nchw(row("in.current_vision_feats.0", 1), g);
  feats.image_pos = seq_first_to_nchw(row("in.current_vision_pos_embeds.0", 1), g);
  feats.high_res_s0 = row("in.sam_heads.propagation_high_res_features.0", 0);
  feats.high_res_s1 = row("in.sam_heads.propagation_high_res_features.1", 0);
  PropagationInputs in = assemble_propagation_inputs(cfg, bank, assignment, bucket, frame_idx, num_frames, feats);
  // The fixture records how many pointer tokens the official code used: check the selection.
  const int ptr_tokens = std::stoi(fixture_meta(f, "memory_attention.num_obj_ptr_tokens", label));
  SEGMUX_CHECK(int64_t(in.selection.pointers.size()) * M == ptr_tokens, label, ": selected ",
               in.selection.pointers.size(), " pointer frames, the official code used ", ptr_tokens, " tokens");
  const int64_t mem_tokens = fixture_tensor(f, "in.memory_attention.memory_image").dim(0);
  SEGMUX_CHECK(int64_t(in.selection.spatial.size()) * g * g == mem_tokens, label, ": selected ",
               in.selection.spatial.size(), " memory frames, the official code used ", mem_tokens, " tokens");

  ParityCase c;
  c.label = bucket_label(label, assignment, bucket);
  c.inputs = in.tensors;
  c.expected[names::propagation_decoder::kPixFeatWithMem] = row("out.pix_feat_with_mem", 0);
  c.expected[names::propagation_decoder::kMasks] = row("out.mask_decoder.masks", 0);
  c.expected[names::propagation_decoder::kIouPred] = row("out.mask_decoder.iou_pred", 0);
  c.expected[names::propagation_decoder::kObjectScoreLogits] = row("out.mask_decoder.object_score_logits", 0);
  c.expected[names::propagation_decoder::kSamTokens] = row("out.mask_decoder.sam_tokens_out", 0);
  // obj_ptr output = mux(data-space pointers), zero in unused slots.
  const Tensor& ptr_data = fixture_tensor(f, "out.sam_heads.obj_ptr");
  Tensor ptr_mux(DType::f32, {1, M, D});
  for (int64_t s = 0; s < M; ++s) {
    const int obj = assignment.buckets[size_t(bucket)][size_t(s)];
    if (obj < 0) continue;
    for (int64_t d = 0; d < D; ++d) ptr_mux.data<float>()[s * D + d] = float(ptr_data.get_as_double(obj * D + d));
  }
  c.expected[names::propagation_decoder::kObjPtr] = ptr_mux;
  for (auto& [name, t] : c.expected) c.tolerance[name] = tracker_tolerance(name == names::propagation_decoder::kMasks);
  return c;
}

}  // namespace

std::vector<ParityCase> propagation_decoder_parity_cases(const std::string& fixture_dir, const ModelConfig& cfg) {
  std::vector<ParityCase> cases;
  for (const std::string& label : fixture_modules(fixture_dir, "propagation_f")) {
    TensorFile f = read_safetensors(fixture_dir + "/modules/" + label + ".safetensors");
    const MultiplexAssignment assignment = parse_multiplex_state(fixture_meta(f, "multiplex_state", label));
    const size_t first = cases.size();
    for (int b = 0; b < assignment.num_buckets(); ++b) cases.push_back(propagation_case(f, label, cfg, assignment, b));
    add_batched_case(cases, first, label, CandidateId::propagation_decoder);
  }
  return cases;
}

bool fixture_has_cases(CandidateId id, const std::string& fixture_dir) {
  namespace fs = std::filesystem;
  auto file = [&](const std::string& rel) { return fs::exists(fixture_dir + "/" + rel); };
  auto add_prompt_frame = [&] {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(fixture_dir) / "video", ec)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("raw_frame_", 0) == 0 && f.ends_with("_add_prompt.safetensors")) return true;
    }
    return false;
  };
  switch (id) {
    case CandidateId::text_encoder:
      return file("modules/text_encoder.safetensors");
    case CandidateId::backbone:
      return file("modules/backbone.safetensors");
    case CandidateId::detector:
      return file("modules/detector.safetensors") || has_fixture_modules(fixture_dir, "detector_exemplar_");
    case CandidateId::interactive_decoder:
      return file("modules/backbone.safetensors") && add_prompt_frame();
    case CandidateId::point_decoder:
      return has_fixture_modules(fixture_dir, "interactive_");
    case CandidateId::propagation_decoder:
      return has_fixture_modules(fixture_dir, "propagation_f");
    case CandidateId::memory_encoder:
      return has_fixture_modules(fixture_dir, "memory_encoder_");
  }
  return false;
}

std::vector<ParityCase> parity_cases(CandidateId id, const std::string& fixture_dir, const ModelConfig& cfg) {
  switch (id) {
    case CandidateId::text_encoder:
      return text_encoder_parity_cases(fixture_dir, cfg);
    case CandidateId::backbone:
      return backbone_parity_cases(fixture_dir, cfg);
    case CandidateId::detector:
      return detector_parity_cases(fixture_dir, cfg);
    case CandidateId::interactive_decoder:
      return interactive_decoder_parity_cases(fixture_dir, cfg);
    case CandidateId::point_decoder:
      return point_decoder_parity_cases(fixture_dir, cfg);
    case CandidateId::propagation_decoder:
      return propagation_decoder_parity_cases(fixture_dir, cfg);
    case CandidateId::memory_encoder:
      return memory_encoder_parity_cases(fixture_dir, cfg);
  }
  fail("no parity cases for candidate id ", int(id));
}

}  // namespace segmux::verify
