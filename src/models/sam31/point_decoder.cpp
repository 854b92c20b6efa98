// point_decoder: the tracker's interactive head with point / box prompts (official sam/prompt_encoder.py
// PromptEncoder._embed_points, sam/mask_decoder.py MaskDecoder (predict_masks, dynamic multimask via
// stability), video_tracking_multiplex.py _forward_sam_heads interactive branch). ONNX opset-17 ops.
#include "models/sam31/point_decoder.h"

#include <cmath>

#include "ir/builder.h"
#include "models/sam31/contract.h"
#include "models/sam31/layers.h"
#include "models/sam31/sam_heads.h"
#include "models/sam31/tensor_names.h"

namespace segmux::sam31 {

namespace {

using ir::GraphBuilder;
using ir::Scope;
using namespace layers;
namespace n = names::point_decoder;

constexpr float kMaskedKey = -1e30f;    // padded prompt slots: exp(-1e30 - max) == 0 in fp32
constexpr float kNoObjScore = -1024.f;  // NO_OBJ_SCORE of the official tracker

int nchw_to_tokens(GraphBuilder& b, int x, int64_t c, int64_t hw) {
  return transpose(b, reshape(b, x, {1, c, hw}), {0, 2, 1});
}

// PromptEncoder._embed_points (pad already in the slots): (1, N, D).
int embed_points(GraphBuilder& b, const ModelConfig& cfg, const Weights& w, int coords, int labels) {
  Scope s(b, "embed_points");
  const std::string pe = kTrackerPrefix + "interactive_sam_prompt_encoder";
  const int64_t D = cfg.d_model, N = point_decoder_slots(cfg);
  // PositionEmbeddingRandom.forward_with_coords: ((c + 0.5) / image_size) * 2 - 1, @ G, * 2 pi, sin | cos.
  int c = div(b, add_scalar(b, coords, 0.5f), scalar(b, float(cfg.image_size)));
  c = add_scalar(b, mul_scalar(b, c, 2.0f), -1.0f);
  c = b.op1("MatMul", {c, const_tensor(b, as_f32(w.get(pe + ".pe_layer.positional_encoding_gaussian_matrix")),
                                       "gaussian_matrix")});
  c = mul_scalar(b, c, float(2.0 * M_PI));
  int pe_pts = concat(b, {b.op1("Sin", {c}), b.op1("Cos", {c})}, 2);  // (1, N, D)
  // Label -1 replaces the encoding by not_a_point_embed; labels 0..3 add point_embeddings[label].
  int idx = reshape(b, b.op1("Add", {labels, b.constant(Tensor::scalar<int64_t>(1), "one")}), {N});
  Tensor is_nap(DType::f32, {5, 1});
  is_nap.data<float>()[0] = 1.0f;
  int nap_sel = reshape(b, gather(b, const_tensor(b, is_nap, "is_not_a_point"), idx, 0), {1, N, 1});
  Tensor table(DType::f32, {5, D});  // row 0 (label -1) adds nothing
  for (int k = 0; k < 4; ++k) {
    const Tensor e = as_f32(w.get(pe + ".point_embeddings." + std::to_string(k) + ".weight"));
    SEGMUX_CHECK(e.numel() == D, pe, ".point_embeddings.", k, " has ", e.numel(), " values, d_model is ", D);
    for (int64_t d = 0; d < D; ++d) table.data<float>()[(k + 1) * D + d] = e.data<float>()[d];
  }
  int added = reshape(b, gather(b, const_tensor(b, table, "point_embeddings"), idx, 0), {1, N, D});
  int nap = reshape(b, param(b, w, pe + ".not_a_point_embed.weight"), {1, 1, D});
  // pe * (1 - is_nap) + nap * is_nap is exact for 0/1 selectors (finite encodings).
  int base = add(b, mul(b, pe_pts, sub(b, scalar(b, 1.0f), nap_sel)), mul(b, nap, nap_sel));
  return add(b, base, added);
}

// Token 0's stability score below the threshold (MaskDecoder._get_stability_scores): bool (1, 1).
int unstable_single_mask(GraphBuilder& b, const ModelConfig& cfg, int mask0) {
  Scope s(b, "stability");
  const int64_t g = cfg.token_grid();
  const float delta = float(cfg.multimask_stability_delta);
  auto area = [&](float t) {
    int gt = cast(b, b.op1("Greater", {mask0, scalar(b, t)}), DType::f32);
    return b.op1("ReduceSum", {reshape(b, gt, {1, 16 * g * g})}, {{"keepdims", int64_t(1)}});
  };
  int inter = area(delta), uni = area(-delta);
  int ratio = div(b, inter, b.op1("Max", {uni, scalar(b, 1.0f)}));
  int stab = b.op1("Where", {b.op1("Greater", {uni, scalar(b, 0.0f)}), ratio, scalar(b, 1.0f)});
  return b.op1("Less", {stab, scalar(b, float(cfg.multimask_stability_thresh))});
}

ir::Graph build(const ModelConfig& cfg, const Weights& w, bool from_features) {
  ir::Graph graph;
  graph.name = "point_decoder";
  GraphBuilder b(graph);
  const int64_t D = cfg.d_model, g = cfg.token_grid(), N = point_decoder_slots(cfg);
  const int64_t T = cfg.num_multimask_outputs + 1;  // mask tokens: single + multimask
  const auto hr = cfg.tracker_high_res_channels();
  const std::string md = kTrackerPrefix + "interactive_sam_mask_decoder";
  const std::string pe = kTrackerPrefix + "interactive_sam_prompt_encoder";

  int pix, s0, s1;
  if (from_features) {
    pix = b.input(n::kImageEmbeddings, DType::f32, {1, D, g, g});
    s0 = b.input(n::kHighResS0, DType::f32, {1, hr[0], 4 * g, 4 * g});
    s1 = b.input(n::kHighResS1, DType::f32, {1, hr[1], 2 * g, 2 * g});
  } else {
    int image = b.input(n::kImage, DType::f32, {1, D, g, g});
    int fpn0 = b.input(n::kFpn0, DType::f32, {1, D, 4 * g, 4 * g});
    int fpn1 = b.input(n::kFpn1, DType::f32, {1, D, 2 * g, 2 * g});
    pix = add(b, image,
              const_tensor(b, as_f32(w.get(kTrackerPrefix + "interactivity_no_mem_embed")).reshaped({1, D, 1, 1}),
                           "no_mem_embed"));
    s0 = conv2d(b, w, fpn0, md + ".conv_s0");
    s1 = conv2d(b, w, fpn1, md + ".conv_s1");
  }
  int coords = b.input(n::kPointCoords, DType::f32, {1, N, 2});
  int labels = b.input(n::kPointLabels, DType::i64, {1, N});
  int valid = b.input(n::kPointValid, DType::f32, {1, N});
  int multimask = b.input(n::kMultimask, DType::f32, {1});

  int sparse = embed_points(b, cfg, w, coords, labels);
  int dense = reshape(b, param(b, w, pe + ".no_mask_embed.weight"), {1, D, 1, 1});
  int src = add(b, pix, dense);  // the dense prompt broadcasts over the grid

  int out_tokens = concat(b,
                          {param(b, w, md + ".obj_score_token.weight"), param(b, w, md + ".iou_token.weight"),
                           param(b, w, md + ".mask_tokens.weight")},
                          0);
  int tokens = concat(b, {unsqueeze(b, out_tokens, {0}), sparse}, 1);  // (1, 2 + T + N, D)
  int key_bias = concat(b,
                        {b.constant(Tensor(DType::f32, {1, 2 + T}), "output_token_bias"),
                         mul_scalar(b, add_scalar(b, valid, -1.0f), -kMaskedKey)},
                        1);
  key_bias = reshape(b, key_bias, {1, 1, 1, 2 + T + N});
  int key_pe = nchw_to_tokens(
      b,
      const_tensor(b, random_fourier_dense_pe(w.get(pe + ".pe_layer.positional_encoding_gaussian_matrix"), g),
                   "dense_pe"),
      D, g * g);
  TwoWayResult tr = two_way_transformer(b, w, md + ".transformer", tokens, nchw_to_tokens(b, src, D, g * g), key_pe,
                                        cfg.twoway_depth, cfg.attn_heads, key_bias);

  // Upscaling with the high-res skips, then one hypernetwork MLP per mask token.
  int up = conv_transpose_2x2(b, w, md + ".output_upscaling.0", tr.keys, g, g);
  up = gelu_erf(b, layer_norm_2d(b, w, add(b, up, s1), md + ".output_upscaling.1", 1e-6f));
  up = conv_transpose_2x2(b, w, md + ".output_upscaling.3",
                          reshape(b, transpose(b, up, {0, 2, 3, 1}), {1, 4 * g * g, hr[1]}), 2 * g, 2 * g);
  up = gelu_erf(b, add(b, up, s0));  // (1, hr0, 4g, 4g)
  std::vector<int> hyper;
  for (int64_t i = 0; i < T; ++i)
    hyper.push_back(mlp(b, w, slice(b, tr.queries, 1, 2 + i, 3 + i),
                        md + ".output_hypernetworks_mlps." + std::to_string(i), cfg.mlp_head_layers));
  int masks = b.op1("MatMul", {concat(b, hyper, 1), reshape(b, up, {1, hr[0], 16 * g * g})});
  masks = reshape(b, masks, {1, T, 4 * g, 4 * g});
  int iou = mlp(b, w, slice(b, tr.queries, 1, 1, 2), md + ".iou_prediction_head", cfg.mlp_head_layers);
  iou = reshape(b, iou, {1, T});
  int score =
      reshape(b, mlp(b, w, slice(b, tr.queries, 1, 0, 1), md + ".pred_obj_score_head", cfg.mlp_head_layers), {1, 1});

  // Selection: best multimask token (argmax IoU over tokens 1..T-1); single mode keeps token 0 unless
  // unstable. The pointer token is the best multimask one in multimask mode, else token 0.
  int best_multi = add(b, b.op1("ArgMax", {slice(b, iou, 1, 1, T)}, {{"axis", int64_t(1)}, {"keepdims", int64_t(1)}}),
                       b.constant(Tensor::scalar<int64_t>(1), "one"));  // (1, 1)
  int zero = b.constant(Tensor::scalar<int64_t>(0), "zero");
  int is_multi = b.op1("Greater", {multimask, scalar(b, 0.5f)});
  int single = b.op1("Where", {unstable_single_mask(b, cfg, slice(b, masks, 1, 0, 1)), best_multi, zero});
  int chosen = b.op1("Where", {is_multi, best_multi, single});  // (1, 1) i64
  int token_idx = b.op1("Where", {is_multi, best_multi, zero});
  int mask = b.op1("GatherElements", {masks, expand(b, reshape(b, chosen, {1, 1, 1, 1}), {1, 1, 4 * g, 4 * g})},
                   {{"axis", int64_t(1)}});
  int chosen_iou = b.op1("GatherElements", {iou, chosen}, {{"axis", int64_t(1)}});
  int token = b.op1("GatherElements",
                    {slice(b, tr.queries, 1, 2, 2 + T), expand(b, reshape(b, token_idx, {1, 1, 1}), {1, 1, D})},
                    {{"axis", int64_t(1)}});
  int appearing = b.op1("Greater", {score, scalar(b, 0.0f)});  // (1, 1)
  int gated = b.op1("Where", {reshape(b, appearing, {1, 1, 1, 1}), mask, scalar(b, kNoObjScore)});
  int ptr = mlp(b, w, reshape(b, token, {1, D}), kTrackerPrefix + "interactive_obj_ptr_proj", cfg.obj_ptr_proj_layers);
  int lam = cast(b, appearing, DType::f32);
  ptr = add(b, mul(b, lam, ptr),
            mul(b, sub(b, scalar(b, 1.0f), lam), linear(b, w, ptr, kTrackerPrefix + "no_obj_ptr_linear")));

  b.output(masks, n::kMasks);
  b.output(iou, n::kIouPred);
  b.output(score, n::kObjectScoreLogit);
  b.output(chosen, n::kBestMaskIndex);
  b.output(mask, n::kMask);
  b.output(chosen_iou, n::kIou);
  b.output(gated, n::kLowResMask);
  b.output(ptr, n::kObjPtr);
  graph.metadata["contract"] = "docs/contracts/point_decoder.md";
  return graph;
}

}  // namespace

int point_decoder_slots(const ModelConfig& cfg) { return cfg.max_prompt_points + 1; }

ir::Graph build_point_decoder(const ModelConfig& cfg, const Weights& w) { return build(cfg, w, false); }

ir::Graph build_point_decoder_variant(const ModelConfig& cfg, const Weights& w, const std::string& variant) {
  SEGMUX_CHECK(variant == kPointDecoderFeaturesVariant, "point_decoder has no build variant '", variant, "'");
  return build(cfg, w, true);
}

bool point_prompt_multimask(const ModelConfig& cfg, const PointPrompt& p) {
  const int64_t n = int64_t(p.labels.size());
  return cfg.multimask_min_pt_num <= n && n <= cfg.multimask_max_pt_num;
}

PointDecoderPromptInputs point_decoder_prompt_inputs(const ModelConfig& cfg, const PointPrompt& p) {
  const int64_t P = int64_t(p.labels.size()), N = point_decoder_slots(cfg);
  SEGMUX_CHECK(p.xy.size() == size_t(2 * P), "point prompt: ", p.xy.size(), " coordinates for ", P, " labels");
  SEGMUX_CHECK(P <= cfg.max_prompt_points, "point prompt has ", P, " points (box corners count as two); at most ",
               cfg.max_prompt_points, " per object and frame (max_prompt_points)");
  PointDecoderPromptInputs in{Tensor(DType::f32, {1, N, 2}), Tensor(DType::i64, {1, N}), Tensor(DType::f32, {1, N}),
                              Tensor(DType::f32, {1})};
  for (int64_t i = 0; i < N; ++i) {
    const bool click = i < P;
    SEGMUX_CHECK(!click || (p.labels[size_t(i)] >= 0 && p.labels[size_t(i)] <= 3), "point label ",
                 click ? p.labels[size_t(i)] : 0, " is not 0 (negative), 1 (positive), 2 or 3 (box corners)");
    in.coords.data<float>()[2 * i] = click ? p.xy[size_t(2 * i)] : 0.0f;
    in.coords.data<float>()[2 * i + 1] = click ? p.xy[size_t(2 * i + 1)] : 0.0f;
    in.labels.data<int64_t>()[i] = click ? p.labels[size_t(i)] : -1;  // SAM's pad point, then unused slots
    in.valid.data<float>()[i] = i <= P ? 1.0f : 0.0f;
  }
  in.multimask.data<float>()[0] = point_prompt_multimask(cfg, p) ? 1.0f : 0.0f;
  return in;
}

contract::Description point_decoder_contract(const ModelConfig& cfg) {
  namespace n = names::point_decoder;
  const int64_t T = cfg.num_multimask_outputs + 1;
  contract::Description d;
  d.summary =
      "The tracker's interactive SAM head with point / box prompts for ONE object on one frame "
      "(official add_new_points -> _forward_sam_heads, interactive branch): masks, IoU, object score "
      "and the object pointer of a conditioning frame made by clicks.";
  const std::string bb = "backbone (interactive head)", pred = "predictor (point_decoder_prompt_inputs)";
  d.inputs[n::kImage] = {"interactive-head level-2 features (NCHW)", bb};
  d.inputs[n::kFpn0] = {"interactive-head level 0 (conv_s0 is applied here)", bb};
  d.inputs[n::kFpn1] = {"interactive-head level 1 (conv_s1 is applied here)", bb};
  d.inputs[n::kPointCoords] = {"x, y in model-input pixels (relative * image_size); 0 in unused slots", pred};
  d.inputs[n::kPointLabels] = {
      "1 positive, 0 negative, 2 / 3 box corners; -1 = SAM's pad point (slot P) and unused slots", pred};
  d.inputs[n::kPointValid] = {"1 for the P points and the pad point, 0 for unused slots", pred};
  d.inputs[n::kMultimask] = {"1 = multimask output (multimask_min_pt_num <= P <= multimask_max_pt_num)", pred};
  const std::string who = "predictor (tracker state, memory encoder)";
  d.outputs[n::kMasks] = {"mask logits of every mask token (0 = single, 1.. = multimask)", "tests"};
  d.outputs[n::kIouPred] = {"IoU predictions of every mask token", "tests"};
  d.outputs[n::kObjectScoreLogit] = {"object-score logit; <= 0 is 'no object'", who};
  d.outputs[n::kBestMaskIndex] = {"the chosen mask token", who};
  d.outputs[n::kMask] = {"the chosen mask before the object-score gating", "tests"};
  d.outputs[n::kIou] = {"IoU prediction of the chosen mask", who};
  d.outputs[n::kLowResMask] = {"the chosen mask, -1024 where the object is absent", who};
  d.outputs[n::kObjPtr] = {"interactive_obj_ptr_proj(token), no_obj_ptr_linear mix when absent", who};
  d.notes = {
      "Selection: multimask -> argmax IoU over tokens 1.." + std::to_string(T - 1) +
          "; single -> token 0 unless its stability score (area(logit > delta) / area(logit > -delta)) is below "
          "multimask_stability_thresh, then the best multimask token. The pointer uses the best multimask token in "
          "multimask mode, token 0 otherwise (use_multimask_token_for_obj_ptr).",
      "Unused prompt slots (point_valid 0) get -1e30 on their attention keys: exactly zero weight.",
      "Variant `features` takes `image_embeddings` (level 2 + interactivity_no_mem_embed), `high_res_s0` and "
      "`high_res_s1` (after conv_s0 / conv_s1) instead of image / fpn0 / fpn1: the official fixtures' tensors."};
  return d;
}

}  // namespace segmux::sam31
