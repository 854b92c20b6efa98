// propagation_decoder: memory attention + multiplex mask decoder + object pointers, one bucket.
// Numerics follow the official SAM 3.1 code (commit 9f22cb9): decoder.py
// (DecoupledTransformerDecoderLayerv2, TransformerEncoderDecoupledCrossAttention, SimpleRoPEAttention),
// sam/transformer.py (TwoWayTransformer), multiplex_mask_decoder.py, video_tracking_multiplex.py
// (_prepare_memory_conditioned_features, _forward_sam_heads). Only ONNX opset-17 ops.
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/tensor_names.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ir/builder.h"
#include "models/sam31/contract.h"
#include "models/sam31/layers.h"
#include "models/sam31/sam_heads.h"
#include "models/sam31/tracker_io.h"

namespace segmux::sam31 {

namespace {

using ir::GraphBuilder;
using ir::Scope;
using namespace layers;

// Additive key bias for padded memory slots: exp(-1e30 - max) is exactly 0 in fp32, and unlike -inf
// it never turns an all-padded row into NaN (that row is replaced by the no-memory fallback anyway).
constexpr float kMaskedKey = -1e30f;

struct Sizes {
  int64_t D, g, L, S, P, M, K, heads, hd;
};

// One DecoupledTransformerDecoderLayerv2 (pre-norm; self-attn with RoPE, decoupled cross-attn with
// RoPE on the spatial memory keys only, GELU FFN).
int memory_attention_layer(GraphBuilder& b, const Weights& w, const std::string& p, const Sizes& z, int tgt,
                           int image_tok, int mem_image, int mem, int mem_image_pos, int key_bias,
                           const layers::RopeTables& rope) {
  // Self-attention (no positional add; pos_enc_at_attn=False).
  {
    Scope s(b, "self_attn");
    int t2 = layer_norm(b, w, tgt, p + ".norm1", 1e-5f);
    int q = split_heads(b, linear(b, w, t2, p + ".self_attn_q_proj"), int(z.heads), false);
    int k = split_heads(b, linear(b, w, t2, p + ".self_attn_k_proj"), int(z.heads), false);
    int v = split_heads(b, linear(b, w, t2, p + ".self_attn_v_proj"), int(z.heads), false);
    q = apply_rope(b, q, rope, "rope_q");
    k = apply_rope(b, k, rope, "rope_k");
    int o = merge_heads(b, sdpa(b, q, k, v), false);
    tgt = add(b, tgt, linear(b, w, o, p + ".self_attn_out_proj"));
  }
  // Cross-attention to the memory.
  {
    Scope s(b, "cross_attn");
    int t2 = layer_norm(b, w, tgt, p + ".norm2", 1e-5f);
    int q = add(b, linear(b, w, image_tok, p + ".image_cross_attn_q_proj"), linear(b, w, t2, p + ".cross_attn_q_proj"));
    int k =
        add(b, linear(b, w, mem_image, p + ".image_cross_attn_k_proj"), linear(b, w, mem, p + ".cross_attn_k_proj"));
    k = add(b, k, mem_image_pos);
    int v = linear(b, w, mem, p + ".cross_attn_v_proj");
    q = apply_rope(b, split_heads(b, q, int(z.heads), false), rope, "rope_q");
    // Keys: RoPE on the spatial part, repeated per memory frame; none on pointer tokens.
    int k_sp = slice(b, k, 1, 0, z.S * z.L);
    int k_ptr = slice(b, k, 1, z.S * z.L, z.S * z.L + z.K);
    k_sp = reshape(b, k_sp, {1, z.S, z.L, z.heads, z.hd});
    k_sp = transpose(b, k_sp, {0, 3, 1, 2, 4});  // (1, heads, S, L, hd)
    k_sp = apply_rope(b, k_sp, rope, "rope_k");
    k_sp = reshape(b, k_sp, {1, z.heads, z.S * z.L, z.hd});
    int kh = b.op1("Concat", {k_sp, split_heads(b, k_ptr, int(z.heads), false)}, {{"axis", int64_t(2)}});
    int vh = split_heads(b, v, int(z.heads), false);
    int o = merge_heads(b, sdpa(b, q, kh, vh, key_bias), false);
    tgt = add(b, tgt, linear(b, w, o, p + ".cross_attn_out_proj"));
  }
  {
    Scope s(b, "ffn");
    int t2 = layer_norm(b, w, tgt, p + ".norm3", 1e-5f);
    t2 = linear(b, w, gelu_erf(b, linear(b, w, t2, p + ".linear1")), p + ".linear2");
    tgt = add(b, tgt, t2);
  }
  return tgt;
}

// NCHW (1, C, h, w) -> tokens (1, h*w, C)
int nchw_to_tokens(GraphBuilder& b, int x, int64_t c, int64_t hw) {
  return transpose(b, reshape(b, x, {1, c, hw}), {0, 2, 1});
}

}  // namespace

int propagation_memory_slots(const ModelConfig& cfg) { return cfg.max_cond_frames_in_attn + cfg.num_maskmem - 1; }
int propagation_pointer_slots(const ModelConfig& cfg) {
  return cfg.max_cond_frames_in_attn + cfg.max_obj_ptrs_in_encoder - 1;
}

Tensor propagation_dense_pe(const ModelConfig& cfg, const Weights& w) {
  Tensor pe = random_fourier_dense_pe(w.get(kTrackerPrefix + "image_pe_layer.positional_encoding_gaussian_matrix"),
                                      cfg.token_grid());
  SEGMUX_CHECK(pe.dim(1) == cfg.d_model, "image_pe_layer gives ", pe.dim(1), " channels, d_model is ", cfg.d_model);
  return pe;
}

ir::Graph build_propagation_decoder(const ModelConfig& cfg, const Weights& w) {
  return build_propagation_decoder_for_slots(cfg, w, propagation_memory_slots(cfg), propagation_pointer_slots(cfg));
}

ir::Graph build_propagation_decoder_for_slots(const ModelConfig& cfg, const Weights& w, int memory_slots,
                                              int pointer_slots) {
  SEGMUX_CHECK(memory_slots >= 1 && pointer_slots >= 1, "propagation_decoder needs at least one memory slot and one ",
               "pointer slot (got ", memory_slots, ", ", pointer_slots, ")");
  ir::Graph graph;
  graph.name = "propagation_decoder";
  GraphBuilder b(graph);
  Sizes z{};
  z.D = cfg.d_model;
  z.g = cfg.token_grid();
  z.L = z.g * z.g;
  z.S = memory_slots;
  z.P = pointer_slots;
  z.M = cfg.multiplex_count;
  z.K = z.P * z.M;
  z.heads = cfg.attn_heads;
  z.hd = z.D / z.heads;
  const int64_t nmask = cfg.num_multimask_outputs;
  const auto hr = cfg.tracker_high_res_channels();
  SEGMUX_CHECK(z.D % z.heads == 0, "d_model ", z.D, " is not divisible by attn_heads ", z.heads);

  // ---- inputs ----
  int image = b.input(names::propagation_decoder::kImage, DType::f32, {1, z.D, z.g, z.g});
  int image_pos = b.input(names::propagation_decoder::kImagePos, DType::f32, {1, z.D, z.g, z.g});
  int high_res_s0 = b.input(names::propagation_decoder::kHighResS0, DType::f32, {1, hr[0], 4 * z.g, 4 * z.g});
  int high_res_s1 = b.input(names::propagation_decoder::kHighResS1, DType::f32, {1, hr[1], 2 * z.g, 2 * z.g});
  int mem_maskmem = b.input(names::propagation_decoder::kMemoryMaskmem, DType::bf16, {z.S, z.D, z.g, z.g});
  int mem_image_in = b.input(names::propagation_decoder::kMemoryImage, DType::f32, {z.S, z.D, z.g, z.g});
  int mem_tpos_index = b.input(names::propagation_decoder::kMemoryTposIndex, DType::i64, {z.S});
  int mem_valid = b.input(names::propagation_decoder::kMemoryValid, DType::f32, {z.S});
  int ptrs = b.input(names::propagation_decoder::kObjPtrs, DType::f32, {z.P, z.M, z.D});
  int ptr_tpos = b.input(names::propagation_decoder::kObjPtrTpos, DType::f32, {z.P});
  int ptr_valid = b.input(names::propagation_decoder::kObjPtrValid, DType::f32, {z.P});
  int slot_valid = b.input(names::propagation_decoder::kSlotValid, DType::f32, {1, z.M});

  // ---- memory attention ----
  int pix_feat_with_mem;
  {
    Scope s(b, "memory_attention");
    int image_tok = nchw_to_tokens(b, image, z.D, z.L);    // (1, L, D)
    int pos_tok = nchw_to_tokens(b, image_pos, z.D, z.L);  // (1, L, D)
    // Spatial memory tokens, slot-major: (S, D, g, g) -> (1, S*L, D).
    auto slots_to_tokens = [&](int x) {
      return reshape(b, transpose(b, reshape(b, x, {z.S, z.D, z.L}), {0, 2, 1}), {1, z.S * z.L, z.D});
    };
    int maskmem_tok = slots_to_tokens(b.op1("Cast", {mem_maskmem}, {{"to", int64_t(1)}}));
    int mem_image_tok = slots_to_tokens(mem_image_in);
    int ptr_tok = reshape(b, ptrs, {1, z.K, z.D});
    int memory = b.op1("Concat", {maskmem_tok, ptr_tok}, {{"axis", int64_t(1)}});
    // Pointer tokens have zero image features (the official pads memory_image with zero rows).
    int zeros = b.constant(Tensor(DType::f32, {1, z.K, z.D}), "ptr_image_zeros");
    int memory_image = b.op1("Concat", {mem_image_tok, zeros}, {{"axis", int64_t(1)}});

    // Temporal encodings: maskmem_tpos_enc[index] on every spatial token of a slot.
    Tensor tpos_table = as_f32(w.get(kTrackerPrefix + "maskmem_tpos_enc")).reshaped({cfg.num_maskmem, z.D});
    int tpos =
        b.op1("Gather", {b.constant(tpos_table.clone(), "maskmem_tpos_enc"), mem_tpos_index}, {{"axis", int64_t(0)}});
    int sp_pos = add(b, pos_tok, reshape(b, tpos, {z.S, 1, z.D}));  // (S, L, D)
    sp_pos = reshape(b, sp_pos, {1, z.S * z.L, z.D});
    // Pointer tokens: 1-D sine PE of the normalized temporal offset (get_1d_sine_pe), then
    // obj_ptr_tpos_proj, repeated for the multiplex_count pointers of a frame.
    const int64_t pe_half = z.D / 2;
    Tensor dim_t(DType::f32, {1, pe_half});
    for (int64_t i = 0; i < pe_half; ++i) {
      float e = (2.0f * float(i / 2)) / float(pe_half);
      dim_t.data<float>()[i] = std::pow(10000.0f, e);
    }
    int pe_arg = b.op1("Div", {reshape(b, ptr_tpos, {z.P, 1}), b.constant(dim_t, "dim_t")});
    int ptr_pe = b.op1("Concat", {b.op1("Sin", {pe_arg}), b.op1("Cos", {pe_arg})}, {{"axis", int64_t(1)}});
    ptr_pe = linear(b, w, ptr_pe, kTrackerPrefix + "obj_ptr_tpos_proj");  // (P, D)
    ptr_pe = b.op1("Expand", {reshape(b, ptr_pe, {z.P, 1, z.D}), b.ints({z.P, z.M, z.D})});
    ptr_pe = reshape(b, ptr_pe, {1, z.K, z.D});
    int memory_image_pos = b.op1("Concat", {sp_pos, ptr_pe}, {{"axis", int64_t(1)}});

    // Key validity: -1e30 on padded slots (memory frames repeated over L tokens, pointer frames over M).
    auto key_bias_of = [&](int valid, int64_t n, int64_t rep) {
      int v = b.op1("Expand", {reshape(b, valid, {n, 1}), b.ints({n, rep})});
      int bias = mul(b, b.op1("Sub", {v, b.scalar_f32(1.0f)}), b.scalar_f32(-kMaskedKey));
      return reshape(b, bias, {1, n * rep});
    };
    int key_bias =
        b.op1("Concat", {key_bias_of(mem_valid, z.S, z.L), key_bias_of(ptr_valid, z.P, z.M)}, {{"axis", int64_t(1)}});
    key_bias = reshape(b, key_bias, {1, 1, 1, z.S * z.L + z.K});

    const layers::RopeTables rope = layers::axial_rope_tables(int(z.hd), int(z.g), int(z.g), float(cfg.rope_theta));

    int tgt = add(b, image_tok, mul(b, pos_tok, b.scalar_f32(0.1f)));
    for (int l = 0; l < cfg.mem_attn_layers; ++l) {
      Scope sl(b, "layer" + std::to_string(l));
      tgt = memory_attention_layer(b, w, kTrackerPrefix + "transformer.encoder.layers." + std::to_string(l), z, tgt,
                                   image_tok, memory_image, memory, memory_image_pos, key_bias, rope);
    }
    tgt = layer_norm(b, w, tgt, kTrackerPrefix + "transformer.encoder.norm", 1e-5f);
    // No spatial memory at all: the official skips the fusion and uses the raw image features.
    int has_memory = b.op1(
        "Greater", {b.op1("ReduceMax", {mem_valid}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(0)}}),
                    b.scalar_f32(0.0f)});
    int fused = b.op1("Where", {has_memory, tgt, image_tok});
    pix_feat_with_mem = reshape(b, transpose(b, fused, {0, 2, 1}), {1, z.D, z.g, z.g});
  }
  b.output(pix_feat_with_mem, names::propagation_decoder::kPixFeatWithMem);

  // ---- multiplex mask decoder ----
  const std::string md = kTrackerPrefix + "sam_mask_decoder";
  int masks, iou_pred, obj_scores, sam_tokens;
  {
    Scope s(b, "mask_decoder");
    int extra;
    {
      int v = reshape(b, slot_valid, {1, z.M, 1});
      int valid_e = b.constant(as_f32(w.get(kTrackerPrefix + "output_valid_embed")).reshaped({1, z.M, z.D}).clone(),
                               "valid_embed");
      int invalid_e = b.constant(as_f32(w.get(kTrackerPrefix + "output_invalid_embed")).reshaped({1, z.M, z.D}).clone(),
                                 "invalid_embed");
      extra = add(b, mul(b, v, valid_e), mul(b, b.op1("Sub", {b.scalar_f32(1.0f), v}), invalid_e));
    }
    Tensor mt = as_f32(w.get(md + ".mask_tokens.weight")).reshaped({1, z.M, nmask, z.D});
    int mask_tokens = add(b, b.constant(mt.clone(), "mask_tokens"), reshape(b, extra, {1, z.M, 1, z.D}));
    mask_tokens = reshape(b, mask_tokens, {1, z.M * nmask, z.D});
    Tensor ot = as_f32(w.get(md + ".obj_score_token.weight")).reshaped({1, z.M, z.D});
    Tensor it = as_f32(w.get(md + ".iou_token.weight")).reshaped({1, z.M, z.D});
    int tokens =
        b.op1("Concat", {b.constant(ot.clone(), "obj_score_token"), b.constant(it.clone(), "iou_token"), mask_tokens},
              {{"axis", int64_t(1)}});
    const int64_t ntok = z.M * (2 + nmask);

    Tensor pe = propagation_dense_pe(cfg, w);
    int key_pe = nchw_to_tokens(b, b.constant(pe, "image_pe"), z.D, z.L);
    const TwoWayResult tr =
        two_way_transformer(b, w, md + ".transformer", tokens, nchw_to_tokens(b, pix_feat_with_mem, z.D, z.L), key_pe,
                            cfg.twoway_depth, int(z.heads));
    const int queries = tr.queries, keys = tr.keys;
    (void)ntok;
    int obj_out = slice(b, queries, 1, 0, z.M);
    int iou_out = slice(b, queries, 1, z.M, 2 * z.M);
    int mask_out = reshape(b, slice(b, queries, 1, 2 * z.M, 2 * z.M + z.M * nmask), {1, z.M, nmask, z.D});

    // Upscaling with the high-res skip features.
    int up = conv_transpose_2x2(b, w, md + ".output_upscaling.0", keys, z.g, z.g);
    up = gelu_erf(b, layer_norm_2d(b, w, add(b, up, high_res_s1), md + ".output_upscaling.1", 1e-6f));
    int up_tok = reshape(b, transpose(b, up, {0, 2, 3, 1}), {1, 4 * z.L, hr[1]});
    up = conv_transpose_2x2(b, w, md + ".output_upscaling.3", up_tok, 2 * z.g, 2 * z.g);
    up = gelu_erf(b, add(b, up, high_res_s0));  // (1, D/8, 4g, 4g)
    const int64_t up_c = b.shape(up)[1];

    std::vector<int> hyper;
    for (int64_t i = 0; i < nmask; ++i) {
      int t = slice(b, mask_out, 2, i, i + 1);
      hyper.push_back(mlp(b, w, t, md + ".output_hypernetworks_mlps." + std::to_string(i), cfg.mlp_head_layers));
    }
    int hyper_in = b.op1("Concat", hyper, {{"axis", int64_t(2)}});  // (1, M, 3, D/8)
    masks = b.op1("MatMul", {reshape(b, hyper_in, {1, z.M * nmask, up_c}), reshape(b, up, {1, up_c, 16 * z.L})});
    masks = reshape(b, masks, {1, z.M, nmask, 4 * z.g, 4 * z.g});
    iou_pred = mlp(b, w, iou_out, md + ".iou_prediction_head", cfg.mlp_head_layers);    // (1, M, 3)
    obj_scores = mlp(b, w, obj_out, md + ".pred_obj_score_head", cfg.mlp_head_layers);  // (1, M, 1)
    sam_tokens = mask_out;                                                              // (1, M, 3, D)
  }
  b.output(masks, names::propagation_decoder::kMasks);
  b.output(iou_pred, names::propagation_decoder::kIouPred);
  b.output(obj_scores, names::propagation_decoder::kObjectScoreLogits);
  b.output(sam_tokens, names::propagation_decoder::kSamTokens);

  // ---- best mask and object pointers (per slot; demux is a gather of slots) ----
  {
    Scope s(b, "obj_ptr");
    int best = b.op1("ArgMax", {iou_pred}, {{"axis", int64_t(2)}, {"keepdims", int64_t(1)}});  // (1, M, 1)
    int idx = b.op1("Expand", {reshape(b, best, {1, z.M, 1, 1}), b.ints({1, z.M, 1, z.D})});
    int token = reshape(b, b.op1("GatherElements", {sam_tokens, idx}, {{"axis", int64_t(2)}}), {1, z.M, z.D});
    int ptr = mlp(b, w, token, kTrackerPrefix + "obj_ptr_proj", cfg.obj_ptr_proj_layers);
    int no_obj = linear(b, w, ptr, kTrackerPrefix + "no_obj_ptr_linear");
    int appearing = b.op1("Greater", {obj_scores, b.scalar_f32(0.0f)});  // (1, M, 1)
    ptr = b.op1("Where", {appearing, ptr, no_obj});
    // Stored pointers are mux(data-space pointers): zero in empty and removed slots.
    ptr = mul(b, ptr, reshape(b, slot_valid, {1, z.M, 1}));
    b.output(ptr, names::propagation_decoder::kObjPtr);
    b.output(reshape(b, best, {1, z.M}), names::propagation_decoder::kBestMaskIndex);
  }
  graph.metadata["contract"] = "docs/contracts/propagation_decoder.md";
  return graph;
}

contract::Description propagation_decoder_contract(const ModelConfig&) {
  namespace n = names::propagation_decoder;
  contract::Description d;
  d.summary =
      "One multiplexed propagation step of the SAM 3.1 tracker for ONE bucket of multiplex_count "
      "object slots: memory attention over padded memory/pointer slots, the multiplex mask decoder, "
      "best-mask selection and object pointers. Buckets are processed by calling it once per bucket.";
  const std::string bb = "backbone (propagation head)", glue = "tracker_io::assemble_propagation_inputs";
  d.inputs[n::kImage] = {"current frame, propagation-head level-2 features (NCHW)", bb};
  d.inputs[n::kImagePos] = {"its sine position encoding (also the stored frames' image pos enc)", bb};
  d.inputs[n::kHighResS0] = {"sam_mask_decoder.conv_s0(propagation level 0)", bb};
  d.inputs[n::kHighResS1] = {"sam_mask_decoder.conv_s1(propagation level 1)", bb};
  d.inputs[n::kMemoryMaskmem] = {"stored mask memories of the selected frames, this bucket", glue};
  d.inputs[n::kMemoryImage] = {"stored image features of the selected frames", glue};
  d.inputs[n::kMemoryTposIndex] = {"row of maskmem_tpos_enc per slot (use_maskmem_tpos_v2)", glue};
  d.inputs[n::kMemoryValid] = {"1 = slot holds a memory frame, 0 = padding", glue};
  d.inputs[n::kObjPtrs] = {"stored object pointers (mux space) of the selected pointer frames", glue};
  d.inputs[n::kObjPtrTpos] = {"temporal offset / (min(num_frames, max_obj_ptrs) - 1)", glue};
  d.inputs[n::kObjPtrValid] = {"1 = slot holds a pointer frame, 0 = padding", glue};
  d.inputs[n::kSlotValid] = {"1 = slot holds an object (output_valid_embed), else output_invalid_embed", glue};
  const std::string out = "tracker_io::demux_propagation_outputs";
  d.outputs[n::kPixFeatWithMem] = {"memory-conditioned features (image features if no memory)", out};
  d.outputs[n::kMasks] = {"mux-space mask logits of the decoder", out};
  d.outputs[n::kIouPred] = {"mux-space IoU predictions", out};
  d.outputs[n::kObjectScoreLogits] = {"mux-space object-score logits", out};
  d.outputs[n::kSamTokens] = {"mux-space mask output tokens", out};
  d.outputs[n::kObjPtr] = {
      "obj_ptr_proj(best token), no_obj_ptr_linear mix when logit <= 0; zero in unused slots (= stored value)",
      out + ", memory bank"};
  d.outputs[n::kBestMaskIndex] = {"argmax of iou_pred (first on ties)", out};
  d.notes = {
      "Slots: S = max_cond_frames_in_attn + num_maskmem - 1 memory frames, P = max_cond_frames_in_attn + "
      "max_obj_ptrs_in_encoder - 1 pointer frames (M tokens each). Padded slots get an additive -1e30 on their "
      "keys: their softmax weight is exactly 0, so results equal the official unpadded computation. With no "
      "valid memory frame the official skips the memory attention; the graph then outputs the image features.",
      "Keys: image_k_proj(memory_image) + k_proj(memory) + memory_image_pos, where memory_image_pos = image_pos + "
      "maskmem_tpos_enc[index] for spatial tokens and obj_ptr_tpos_proj(sine(obj_ptr_tpos)) for pointer tokens "
      "(whose image features are zero). The stored maskmem_pos_enc does not enter the computation. RoPE on "
      "queries and spatial keys (repeated per frame), none on pointer tokens.",
      "Masks forced to -1024 for absent objects and the best mask are applied by the demux (exact selections)."};
  return d;
}

}  // namespace segmux::sam31
