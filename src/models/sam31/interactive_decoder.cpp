// interactive_decoder: the tracker's mask-as-output path for one object (official
// video_tracking_multiplex.py _use_mask_as_output -> _forward_sam_heads, interactive branch;
// sam/prompt_encoder.py; sam/mask_decoder.py; sam/transformer.py). Only ONNX opset-17 ops.
#include "models/sam31/interactive_decoder.h"

#include <cmath>

#include "io/safetensors.h"
#include "ir/builder.h"
#include "models/sam31/contract_util.h"
#include "models/sam31/layers.h"
#include "runtime/session.h"

namespace segmux::sam31 {

namespace {

using ir::GraphBuilder;
using ir::Scope;
using namespace layers;

const std::string kTracker = "tracker.model.";

Tensor f32(const Tensor& t) { return t.dtype() == DType::f32 ? t : t.cast(DType::f32); }

// (1, C, h, w) -> (1, h*w, C)
int nchw_to_tokens(GraphBuilder& b, int x, int64_t c, int64_t hw) {
  return transpose(b, reshape(b, x, {1, c, hw}), {0, 2, 1});
}

// LayerNorm2d (sam/common.py): normalise over channels of NCHW, eps 1e-6, then per-channel affine.
int layer_norm_2d(GraphBuilder& b, const Weights& w, int x, const std::string& prefix) {
  Scope s(b, "ln2d");
  int t = transpose(b, x, {0, 2, 3, 1});
  t = layer_norm(b, w, t, prefix, 1e-6f);
  return transpose(b, t, {0, 3, 1, 2});
}

}  // namespace

Tensor random_fourier_dense_pe(const Tensor& gaussian_matrix, int64_t g) {
  const Tensor gm = f32(gaussian_matrix);
  SEGMUX_CHECK(gm.rank() == 2 && gm.dim(0) == 2, "positional_encoding_gaussian_matrix has shape ",
               shape_str(gm.shape()), ", expected (2, F)");
  const int64_t half = gm.dim(1);
  const float* G = gm.data<float>();
  Tensor pe(DType::f32, {1, 2 * half, g, g});
  float* out = pe.data<float>();
  const float two_pi = float(2.0 * M_PI);
  for (int64_t i = 0; i < g; ++i)
    for (int64_t j = 0; j < g; ++j) {
      // grid.cumsum - 0.5, normalised by the size, then mapped to [-1, 1] (fp32 like the original).
      float y = 2.0f * ((float(i + 1) - 0.5f) / float(g)) - 1.0f;
      float x = 2.0f * ((float(j + 1) - 0.5f) / float(g)) - 1.0f;
      for (int64_t c = 0; c < half; ++c) {
        float v = two_pi * (x * G[c] + y * G[half + c]);
        out[(c * g + i) * g + j] = std::sin(v);
        out[((half + c) * g + i) * g + j] = std::cos(v);
      }
    }
  return pe;
}

int sam_attention(GraphBuilder& b, const Weights& w, const std::string& p, int q, int k, int v, int heads) {
  Scope s(b, p.substr(p.rfind('.') + 1));
  int qh = split_heads(b, linear(b, w, q, p + ".q_proj"), heads, false);
  int kh = split_heads(b, linear(b, w, k, p + ".k_proj"), heads, false);
  int vh = split_heads(b, linear(b, w, v, p + ".v_proj"), heads, false);
  int o = merge_heads(b, sdpa(b, qh, kh, vh), false);
  return linear(b, w, o, p + ".out_proj");
}

TwoWayResult two_way_transformer(GraphBuilder& b, const Weights& w, const std::string& tw, int tokens, int keys,
                                 int key_pe, int depth, int heads) {
  int queries = tokens;
  for (int l = 0; l < depth; ++l) {
    Scope sl(b, "twoway" + std::to_string(l));
    const std::string p = tw + ".layers." + std::to_string(l);
    if (l == 0) {  // skip_first_layer_pe: no residual, no positional add
      queries = sam_attention(b, w, p + ".self_attn", queries, queries, queries, heads);
    } else {
      int q = add(b, queries, tokens);
      queries = add(b, queries, sam_attention(b, w, p + ".self_attn", q, q, queries, heads));
    }
    queries = layer_norm(b, w, queries, p + ".norm1", 1e-5f);
    int q = add(b, queries, tokens), k = add(b, keys, key_pe);
    queries = add(b, queries, sam_attention(b, w, p + ".cross_attn_token_to_image", q, k, keys, heads));
    queries = layer_norm(b, w, queries, p + ".norm2", 1e-5f);
    int m = linear(b, w, relu(b, linear(b, w, queries, p + ".mlp.lin1")), p + ".mlp.lin2");
    queries = layer_norm(b, w, add(b, queries, m), p + ".norm3", 1e-5f);
    q = add(b, queries, tokens);
    k = add(b, keys, key_pe);
    keys = add(b, keys, sam_attention(b, w, p + ".cross_attn_image_to_token", k, q, queries, heads));
    keys = layer_norm(b, w, keys, p + ".norm4", 1e-5f);
  }
  int q = add(b, queries, tokens), k = add(b, keys, key_pe);
  queries = add(b, queries, sam_attention(b, w, tw + ".final_attn_token_to_image", q, k, keys, heads));
  queries = layer_norm(b, w, queries, tw + ".norm_final_attn", 1e-5f);
  return {queries, keys};
}

ir::Graph build_interactive_decoder(const ModelConfig& cfg, const Weights& w) {
  ir::Graph graph;
  graph.name = "interactive_decoder";
  GraphBuilder b(graph);
  const int64_t D = cfg.d_model, g = cfg.token_grid(), Hi = cfg.input_mask_size();
  const std::string md = kTracker + "interactive_sam_mask_decoder";
  const std::string pe = kTracker + "interactive_sam_prompt_encoder";

  int image = b.input("image", DType::f32, {1, D, g, g});
  int mask = b.input("mask", DType::f32, {1, 1, Hi, Hi});

  // Backbone features with the "no memory" embedding (directly_add_no_mem_embed).
  int pix = add(b, image, const_tensor(b, f32(w.get(kTracker + "interactivity_no_mem_embed")).reshaped({1, D, 1, 1}),
                                       "no_mem_embed"));
  // Mask prompt: stride-4 conv to the SAM mask-input size, then the prompt encoder's mask_downscaling.
  int m = conv2d(b, w, mask, kTracker + "interactive_mask_downsample", 4);
  m = gelu_erf(b, layer_norm_2d(b, w, conv2d(b, w, m, pe + ".mask_downscaling.0", 2), pe + ".mask_downscaling.1"));
  m = gelu_erf(b, layer_norm_2d(b, w, conv2d(b, w, m, pe + ".mask_downscaling.3", 2), pe + ".mask_downscaling.4"));
  int dense = conv2d(b, w, m, pe + ".mask_downscaling.6");
  int src = add(b, pix, dense);

  // Tokens: obj-score, IoU, mask tokens, then the sparse prompt = the empty point and SAM's pad point.
  Tensor nap = f32(w.get(pe + ".not_a_point_embed.weight"));
  int tokens = concat(b,
                      {param(b, w, md + ".obj_score_token.weight"), param(b, w, md + ".iou_token.weight"),
                       param(b, w, md + ".mask_tokens.weight"), const_tensor(b, nap, "not_a_point"),
                       const_tensor(b, nap, "pad_point")},
                      0);
  tokens = unsqueeze(b, tokens, {0});
  int key_pe = nchw_to_tokens(
      b, const_tensor(b, random_fourier_dense_pe(w.get(pe + ".pe_layer.positional_encoding_gaussian_matrix"), g), "dense_pe"),
      D, g * g);
  int keys = nchw_to_tokens(b, src, D, g * g);
  TwoWayResult tr = two_way_transformer(b, w, md + ".transformer", tokens, keys, key_pe, cfg.twoway_depth, cfg.attn_heads);

  // hs[:, 0] -> object score; hs[:, 2] = mask token 0 -> object pointer (single-mask output).
  int score_tok = squeeze(b, slice(b, tr.queries, 1, 0, 1), {1});
  int mask_tok = squeeze(b, slice(b, tr.queries, 1, 2, 3), {1});
  int sam_score = mlp(b, w, score_tok, md + ".pred_obj_score_head", 3);  // (1, 1)
  int ptr = mlp(b, w, mask_tok, kTracker + "interactive_obj_ptr_proj", 3);  // (1, D)
  auto mix = [&](int p, int appearing) {  // lambda * p + (1 - lambda) * no_obj_ptr_linear(p)
    int lam = cast(b, appearing, DType::f32);
    int other = linear(b, w, p, kTracker + "no_obj_ptr_linear");
    return add(b, mul(b, lam, p), mul(b, sub(b, scalar(b, 1.0f), lam), other));
  };
  ptr = mix(ptr, b.op1("Greater", {sam_score, scalar(b, 0.0f)}));
  // The mask decides presence from here on (official: any pixel > 0).
  int present = b.op1("Greater", {b.op1("ReduceMax", {reshape(b, mask, {1, Hi * Hi})}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}}),
                                  scalar(b, 0.0f)});
  ptr = mix(ptr, present);
  int score = add_scalar(b, mul_scalar(b, cast(b, present, DType::f32), 20.0f), -10.0f);

  b.output(ptr, "obj_ptr");
  b.output(score, "object_score_logit");
  b.output(sam_score, "sam_object_score_logit");
  graph.metadata["contract"] = "docs/contracts/interactive_decoder.md";
  return graph;
}

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
  Session s(std::move(g), SessionOptions{1, false});
  return s.run({{"x", logits.reshaped({1, k, h, w})}}).at("y");
}

}  // namespace

std::vector<ParityCase> interactive_decoder_parity_cases(const std::string& dir, const ModelConfig& cfg) {
  // Frame 0, add_prompt: the three new objects' detector masks through the mask-as-output path.
  TensorFile raw = read_safetensors(dir + "/video/raw_frame_000_add_prompt.safetensors");
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
    Tensor logits = contract::take(cand_masks, 0, row, 1);
    ParityCase c;
    c.label = "add_prompt_f000_obj" + std::to_string(obj);
    c.inputs["image"] = bb.at("out.interactive.fpn2").clone();
    c.inputs["mask"] = upsample_binarize(logits, cfg.input_mask_size());
    c.expected["obj_ptr"] = contract::take(ptr, 0, obj, 1);
    c.expected["sam_object_score_logit"] = contract::take(sam_scores, 0, obj, 1);
    cases.push_back(std::move(c));
    ++obj;
  }
  SEGMUX_CHECK(obj == ptr.dim(0), "fixture: found ", obj, " new-object masks for ", ptr.dim(0), " pointers");
  return cases;
}

std::string interactive_decoder_contract(const ModelConfig& cfg) {
  const int64_t D = cfg.d_model, g = cfg.token_grid(), Hi = cfg.input_mask_size();
  contract::Table t("interactive_decoder",
                    "The tracker's mask-as-output path for one object: the object pointer stored for a frame "
                    "where a mask is given (new objects, reconditioning).");
  t.input("image", {1, D, g, g}, "f32", "interactive-head level-2 features of the frame (NCHW)", "backbone");
  t.input("mask", {1, 1, Hi, Hi}, "f32", "the object's binary mask (0/1) at input_mask_size", "predictor");
  t.output("obj_ptr", {1, D}, "f32", "object pointer for the memory bank (data space)", "memory bank");
  t.output("object_score_logit", {1, 1}, "f32", "+10 if the mask is non-empty else -10", "predictor");
  t.output("sam_object_score_logit", {1, 1}, "f32", "the SAM head's own object score (checks only)", "tests");
  t.note("Run once per object; the predictor mixes nothing else in. The stored low-res mask of the frame is "
         "mask * 20 - 10 resized (antialiased) by the predictor, not by this graph.");
  return t.markdown();
}

}  // namespace segmux::sam31
