// memory_encoder: SAM 3.1 multiplex mask-memory encoder for one bucket, following the official
// video_tracking_multiplex.py (_encode_new_memory) and memory.py (SimpleMaskEncoder,
// SimpleMaskDownSampler, CXBlock, SimpleFuser). Only ONNX opset-17 ops.
#include "models/sam31/memory_encoder.h"
#include "models/sam31/tensor_names.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

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

// out = sum_k w_k * x[idx_k] along `axis` (taps zero-padded to the widest output).
int resize_axis(GraphBuilder& b, int x, int64_t axis, const ResizeTaps& taps) {
  size_t width = 0;
  for (auto& t : taps.index) width = std::max(width, t.size());
  const int64_t out_n = int64_t(taps.index.size());
  Shape wshape(4, 1);
  wshape[size_t(axis)] = out_n;
  int acc = -1;
  for (size_t k = 0; k < width; ++k) {
    std::vector<int64_t> idx(static_cast<size_t>(out_n));
    Tensor wk(DType::f32, wshape);
    for (int64_t i = 0; i < out_n; ++i) {
      const auto& ti = taps.index[size_t(i)];
      idx[size_t(i)] = k < ti.size() ? ti[k] : ti[0];
      wk.data<float>()[i] = k < ti.size() ? taps.weight[size_t(i)][k] : 0.0f;
    }
    int gathered = b.op1("Gather", {x, b.ints(idx)}, {{"axis", axis}});
    int term = mul(b, gathered, b.constant(wk, "resize_w"));
    acc = acc < 0 ? term : add(b, acc, term);
  }
  return acc;
}

}  // namespace

ResizeTaps antialias_bilinear_taps(int64_t input_size, int64_t output_size) {
  SEGMUX_CHECK(input_size > 0 && output_size > 0, "resize sizes must be positive");
  // PyTorch _upsample_bilinear2d_aa (align_corners=False): triangle filter widened by the scale when
  // downsampling, weights normalized per output; computed in fp32 like the CPU kernel for fp32 input.
  const float scale = float(input_size) / float(output_size);
  const float support = scale >= 1.0f ? 1.0f * scale : 1.0f;
  const float invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  ResizeTaps taps;
  for (int64_t i = 0; i < output_size; ++i) {
    const float center = scale * (float(i) + 0.5f);
    const int64_t xmin = std::max(int64_t(center - support + 0.5f), int64_t(0));
    const int64_t xsize = std::min(int64_t(center + support + 0.5f), input_size) - xmin;
    std::vector<int64_t> idx;
    std::vector<float> wts;
    float total = 0.0f;
    for (int64_t j = 0; j < xsize; ++j) {
      float x = std::fabs((float(j + xmin) - center + 0.5f) * invscale);
      float wv = x < 1.0f ? 1.0f - x : 0.0f;
      idx.push_back(j + xmin);
      wts.push_back(wv);
      total += wv;
    }
    if (total != 0.0f)
      for (auto& v : wts) v /= total;
    SEGMUX_CHECK(!idx.empty(), "resize ", input_size, " -> ", output_size, ": output ", i, " has no source");
    taps.index.push_back(std::move(idx));
    taps.weight.push_back(std::move(wts));
  }
  return taps;
}

ir::Graph build_memory_encoder_for_mask_size(const ModelConfig& cfg, const Weights& w, int mask_size) {
  ir::Graph graph;
  graph.name = "memory_encoder";
  GraphBuilder b(graph);
  const int64_t D = cfg.d_model, g = cfg.token_grid(), M = cfg.multiplex_count;
  const int64_t S = cfg.input_mask_size(), Hm = mask_size;
  SEGMUX_CHECK(Hm > 0, "memory-encoder mask size must be positive");

  int pix_feat = b.input(names::memory_encoder::kPixFeat, DType::f32, {1, D, g, g});
  int mask_logits = b.input(names::memory_encoder::kMaskLogits, DType::f32, {1, M, Hm, Hm});
  int slot_valid = b.input(names::memory_encoder::kSlotValid, DType::f32, {1, M});
  int slot_cond = b.input(names::memory_encoder::kSlotConditioning, DType::f32, {1, M});
  int slot_score = b.input(names::memory_encoder::kSlotObjectScore, DType::f32, {1, M});

  // Mask input: sigmoid(logit) * 2 - 1 (sigmoid_scale 2, bias -1), zero in empty/removed slots, then
  // the conditioning channels (condition_as_mask_input: fg 1, bg 0): (1, 2M, Hm, Hm).
  int x;
  {
    Scope s(b, "mask_input");
    int valid4 = reshape(b, slot_valid, {1, M, 1, 1});
    int m = add(b, mul(b, b.op1("Sigmoid", {mask_logits}), b.scalar_f32(2.0f)), b.scalar_f32(-1.0f));
    m = mul(b, m, valid4);
    int cond = b.op1("Expand", {reshape(b, mul(b, slot_cond, slot_valid), {1, M, 1, 1}), b.ints({1, M, Hm, Hm})});
    x = b.op1("Concat", {m, cond}, {{"axis", int64_t(1)}});
    if (Hm != S) {
      ResizeTaps taps = antialias_bilinear_taps(Hm, S);
      x = resize_axis(b, x, 2, taps);
      x = resize_axis(b, x, 3, taps);
    }
  }
  // SimpleMaskDownSampler: stages of [Conv k s2 -> LayerNorm2d -> GELU], then a 1x1 conv.
  {
    Scope s(b, "mask_downsampler");
    const std::string p = kTrackerPrefix + "maskmem_backbone.mask_downsampler.encoder.";
    const int stages = cfg.maskmem_downsample_stages;
    const int64_t pad = cfg.maskmem_downsample_kernel / 2;
    for (int i = 0; i < stages; ++i) {
      x = conv2d(b, w, x, p + std::to_string(3 * i), 2, int(pad));
      x = gelu_erf(b, layer_norm_2d(b, w, x, p + std::to_string(3 * i + 1), 1e-6f));
    }
    x = conv2d(b, w, x, p + std::to_string(3 * stages), 1, 0);
    SEGMUX_CHECK(b.shape(x) == Shape({1, D, g, g}), "mask downsampler output ", shape_str(b.shape(x)),
                 " does not match the feature grid");
  }
  x = add(b, conv2d(b, w, pix_feat, kTrackerPrefix + "maskmem_backbone.pix_feat_proj", 1, 0), x);
  // SimpleFuser: CXBlocks (depth-wise conv, LayerNorm2d, pointwise MLP with GELU, layer scale).
  for (int l = 0; l < cfg.memory_fuser_layers; ++l) {
    const std::string p = kTrackerPrefix + "maskmem_backbone.fuser.layers." + std::to_string(l);
    Scope s(b, "fuser" + std::to_string(l));
    int y = conv2d(b, w, x, p + ".dwconv", 1, int(cfg.memory_fuser_kernel / 2), int(D));
    y = layer_norm_2d(b, w, y, p + ".norm", 1e-6f);
    y = transpose(b, y, {0, 2, 3, 1});
    y = linear(b, w, gelu_erf(b, linear(b, w, y, p + ".pwconv1")), p + ".pwconv2");
    y = mul(b, y, b.constant(as_f32(w.get(p + ".gamma")).clone(), "gamma"));
    x = add(b, x, transpose(b, y, {0, 3, 1, 2}));
  }
  if (w.has(kTrackerPrefix + "maskmem_backbone.out_proj.weight"))
    x = conv2d(b, w, x, kTrackerPrefix + "maskmem_backbone.out_proj", 1, 0);
  // no_obj_embed_spatial for every slot whose object is absent (logit <= 0); empty slots count as
  // absent (the official muxes a 0 logit there).
  {
    Scope s(b, "no_obj");
    int appearing = b.op1("Cast", {b.op1("Greater", {slot_score, b.scalar_f32(0.0f)})}, {{"to", int64_t(1)}});
    appearing = mul(b, appearing, slot_valid);
    int absent = b.op1("Sub", {b.scalar_f32(1.0f), appearing});                      // (1, M)
    Tensor emb = as_f32(w.get(kTrackerPrefix + "no_obj_embed_spatial")).clone();     // (M, D)
    int embed = b.op1("MatMul", {absent, b.constant(emb, "no_obj_embed_spatial")});  // (1, D)
    x = add(b, x, reshape(b, embed, {1, D, 1, 1}));
  }
  b.output(x, names::memory_encoder::kMaskmemFeatures);
  int stored = b.op1("Cast", {x}, {{"to", int64_t(16)}});  // TensorProto BFLOAT16
  b.output(stored, names::memory_encoder::kMaskmemFeaturesBf16);
  graph.metadata["contract"] = "docs/contracts/memory_encoder.md";
  return graph;
}

ir::Graph build_memory_encoder(const ModelConfig& cfg, const Weights& w) {
  return build_memory_encoder_for_mask_size(cfg, w, cfg.input_mask_size());
}

ir::Graph build_memory_encoder_variant(const ModelConfig& cfg, const Weights& w, const std::string& variant) {
  SEGMUX_CHECK(variant == kMemoryEncoderImageSizeVariant, "memory_encoder has no variant '", variant, "'");
  return build_memory_encoder_for_mask_size(cfg, w, cfg.image_size);
}

contract::Description memory_encoder_contract(const ModelConfig&) {
  namespace n = names::memory_encoder;
  contract::Description d;
  d.summary =
      "SAM 3.1 multiplex mask-memory encoder (_encode_new_memory + SimpleMaskEncoder) for ONE bucket: "
      "mask logits of the bucket's object slots -> memory features kept in the memory bank.";
  const std::string glue = "tracker_io::assemble_memory_encoder_inputs";
  d.inputs[n::kPixFeat] = {
      "propagation level-2 features of the frame (bf16-rounded values where the official keeps them as bf16)",
      "backbone / memory bank"};
  d.inputs[n::kMaskLogits] = {"mux-space mask logits at input_mask_size (variant image_size_masks: image_size)", glue};
  d.inputs[n::kSlotValid] = {"1 = slot holds an object (empty/removed slots are zeroed)", glue};
  d.inputs[n::kSlotConditioning] = {"1 = the object's mask is a conditioning input on this frame", glue};
  d.inputs[n::kSlotObjectScore] = {"mux-space object-score logits (absent if <= 0)", glue};
  d.outputs[n::kMaskmemFeatures] = {"memory features after no_obj_embed_spatial (fp32)", "tests"};
  d.outputs[n::kMaskmemFeaturesBf16] = {"the stored copy (official .to(bfloat16))",
                                        "memory bank (StoredFrame::maskmem_features, stacked over buckets)"};
  d.notes = {
      "Mask input: sigmoid(logit) * 2 - 1 per slot (0 in unused slots), then M conditioning channels (1.0 / 0.0), "
      "(1, 2M, H, W). Variant image_size_masks resizes to input_mask_size with PyTorch's antialiased bilinear "
      "weights (align_corners=False) as Gather/Mul/Add along each axis (exact, standard ONNX).",
      "no_obj_embed_spatial[s] is added for every slot whose object is absent (logit <= 0) or that is empty: the "
      "official muxes a 0 logit into empty slots. The sine position encoding of the SimpleMaskEncoder is not "
      "an output: it is constant and the propagation never reads it."};
  return d;
}

}  // namespace segmux::sam31
