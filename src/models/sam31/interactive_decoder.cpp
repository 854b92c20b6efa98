// interactive_decoder: the tracker's mask-as-output path for one object (official
// video_tracking_multiplex.py _use_mask_as_output -> _forward_sam_heads, interactive branch;
// sam/prompt_encoder.py; sam/mask_decoder.py; sam/transformer.py). Only ONNX opset-17 ops.
#include "models/sam31/interactive_decoder.h"
#include "models/sam31/tensor_names.h"

#include <cmath>

#include "ir/builder.h"
#include "models/sam31/contract.h"
#include "models/sam31/layers.h"
#include "models/sam31/sam_heads.h"
#include "runtime/interpreter.h"

namespace segmux::sam31 {

namespace {

using ir::GraphBuilder;
using ir::Scope;
using namespace layers;

// (1, C, h, w) -> (1, h*w, C)
int nchw_to_tokens(GraphBuilder& b, int x, int64_t c, int64_t hw) {
  return transpose(b, reshape(b, x, {1, c, hw}), {0, 2, 1});
}

}  // namespace

ir::Graph build_interactive_decoder(const ModelConfig& cfg, const Weights& w) {
  ir::Graph graph;
  graph.name = "interactive_decoder";
  GraphBuilder b(graph);
  const int64_t D = cfg.d_model, g = cfg.token_grid(), Hi = cfg.input_mask_size();
  const std::string md = kTrackerPrefix + "interactive_sam_mask_decoder";
  const std::string pe = kTrackerPrefix + "interactive_sam_prompt_encoder";

  int image = b.input(names::interactive_decoder::kImage, DType::f32, {1, D, g, g});
  int mask = b.input(names::interactive_decoder::kMask, DType::f32, {1, 1, Hi, Hi});

  // Backbone features with the "no memory" embedding (directly_add_no_mem_embed).
  int pix = add(b, image,
                const_tensor(b, as_f32(w.get(kTrackerPrefix + "interactivity_no_mem_embed")).reshaped({1, D, 1, 1}),
                             "no_mem_embed"));
  // Mask prompt: stride-4 conv to the SAM mask-input size, then the prompt encoder's mask_downscaling.
  int m = conv2d(b, w, mask, kTrackerPrefix + "interactive_mask_downsample", 4);
  int dense = prompt_mask_embedding(b, w, pe, m);
  int src = add(b, pix, dense);

  // Tokens: obj-score, IoU, mask tokens, then the sparse prompt = the empty point and SAM's pad point.
  Tensor nap = as_f32(w.get(pe + ".not_a_point_embed.weight"));
  int tokens = concat(
      b,
      {param(b, w, md + ".obj_score_token.weight"), param(b, w, md + ".iou_token.weight"),
       param(b, w, md + ".mask_tokens.weight"), const_tensor(b, nap, "not_a_point"), const_tensor(b, nap, "pad_point")},
      0);
  tokens = unsqueeze(b, tokens, {0});
  int key_pe = nchw_to_tokens(
      b,
      const_tensor(b, random_fourier_dense_pe(w.get(pe + ".pe_layer.positional_encoding_gaussian_matrix"), g),
                   "dense_pe"),
      D, g * g);
  int keys = nchw_to_tokens(b, src, D, g * g);
  TwoWayResult tr =
      two_way_transformer(b, w, md + ".transformer", tokens, keys, key_pe, cfg.twoway_depth, cfg.attn_heads);

  // hs[:, 0] -> object score; hs[:, 2] = mask token 0 -> object pointer (single-mask output).
  int score_tok = squeeze(b, slice(b, tr.queries, 1, 0, 1), {1});
  int mask_tok = squeeze(b, slice(b, tr.queries, 1, 2, 3), {1});
  int sam_score = mlp(b, w, score_tok, md + ".pred_obj_score_head", 3);           // (1, 1)
  int ptr = mlp(b, w, mask_tok, kTrackerPrefix + "interactive_obj_ptr_proj", 3);  // (1, D)
  auto mix = [&](int p, int appearing) {  // lambda * p + (1 - lambda) * no_obj_ptr_linear(p)
    int lam = cast(b, appearing, DType::f32);
    int other = linear(b, w, p, kTrackerPrefix + "no_obj_ptr_linear");
    return add(b, mul(b, lam, p), mul(b, sub(b, scalar(b, 1.0f), lam), other));
  };
  ptr = mix(ptr, b.op1("Greater", {sam_score, scalar(b, 0.0f)}));
  // The mask decides presence from here on (official: any pixel > 0).
  int present = b.op1("Greater", {b.op1("ReduceMax", {reshape(b, mask, {1, Hi * Hi})},
                                        {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}}),
                                  scalar(b, 0.0f)});
  ptr = mix(ptr, present);
  int score = add_scalar(b, mul_scalar(b, cast(b, present, DType::f32), 20.0f), -10.0f);

  b.output(ptr, names::interactive_decoder::kObjPtr);
  b.output(score, names::interactive_decoder::kObjectScoreLogit);
  b.output(sam_score, names::interactive_decoder::kSamObjectScoreLogit);
  graph.metadata["contract"] = "docs/contracts/interactive_decoder.md";
  return graph;
}

contract::Description interactive_decoder_contract(const ModelConfig&) {
  namespace n = names::interactive_decoder;
  contract::Description d;
  d.summary =
      "The tracker's mask-as-output path for one object: the object pointer stored for a frame "
      "where a mask is given (new objects, reconditioning).";
  d.inputs[n::kImage] = {"interactive-head level-2 features of the frame (NCHW)", "backbone"};
  d.inputs[n::kMask] = {"the object's binary mask (0/1) at input_mask_size", "predictor"};
  d.outputs[n::kObjPtr] = {"object pointer for the memory bank (data space)", "memory bank"};
  d.outputs[n::kObjectScoreLogit] = {"+10 if the mask is non-empty else -10", "predictor"};
  d.outputs[n::kSamObjectScoreLogit] = {"the SAM head's own object score (checks only)", "tests"};
  d.notes = {
      "Run once per object; the predictor mixes nothing else in. The stored low-res mask of the frame is "
      "mask * 20 - 10 resized (antialiased) by the predictor, not by this graph."};
  return d;
}

}  // namespace segmux::sam31
