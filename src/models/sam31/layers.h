// Graph-building helpers shared by the SAM 3.1 candidates: every function appends standard ONNX
// opset-17 nodes (default domain) to a GraphBuilder and returns the output value id.
//
// Conventions
// - Weights come from sam31::Weights under the official key names; `prefix` is the module path
//   ("detector.transformer.decoder.layers.0.cross_attn"), the helper appends ".weight" etc.
// - Numerics follow the official PyTorch modules (eps values, op order) so fp32 parity holds.
//
// Patterns emitted (for the fusion passes in src/compiler/passes/fuse_*):
// - linear:      MatMul(x, W^T as a constant [in,out]) -> Add(bias [out])          (bias optional)
// - layer_norm:  LayerNormalization(x, scale, bias, axis=-1, epsilon)
// - gelu_erf:    Div(x, sqrt(2)) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)            (exact erf GELU)
// - attention (sdpa): MatMul(q, Transpose(k)) -> Mul(1/sqrt(head_dim)) -> [Add(bias)] -> Softmax(-1)
//                 -> MatMul(v); q/k/v are [..., heads, L, head_dim]. Masks are additive float
//                 biases holding 0 / -inf (mask_to_bias: Where(mask, -inf, 0)).
// - group_norm:  Reshape(x, [N, G, -1]) -> InstanceNormalization(scale=1[G], bias=0[G], epsilon)
//                 -> Reshape(x's shape) -> Mul(gamma [C,1,1]) -> Add(beta [C,1,1])
//                 (the pattern torch.onnx emits for nn.GroupNorm).
// - rope (2-D axial, real arithmetic): Reshape(x, [..., L, hd/2, 2]) -> Split(last axis, 2) ->
//                 re = a*cos - b*sin, im = a*sin + b*cos (cos/sin constants [L, hd/2, 1]) ->
//                 Concat(last axis) -> Reshape back. Pairs are interleaved (real, imag) as in
//                 torch.view_as_complex.
// - bf16 rounding: Cast(to=bf16) -> Cast(to=f32) (round to nearest even).
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_ops.h"
#include "ir/builder.h"
#include "models/sam31/weights.h"

namespace segmux::sam31::layers {

using ir::GraphBuilder;

// ---- constants and small tensor ops -------------------------------------------------------------
int param(GraphBuilder& b, const Weights& w, const std::string& key);  // weight as an initializer
int const_tensor(GraphBuilder& b, const Tensor& t, const std::string& name = "const");
int const_f32(GraphBuilder& b, const Shape& shape, const std::vector<float>& values, const std::string& name = "const");
int scalar(GraphBuilder& b, float v);
int ints(GraphBuilder& b, const std::vector<int64_t>& v);

int add(GraphBuilder& b, int x, int y);
int sub(GraphBuilder& b, int x, int y);
int mul(GraphBuilder& b, int x, int y);
int div(GraphBuilder& b, int x, int y);
int add_scalar(GraphBuilder& b, int x, float s);
int mul_scalar(GraphBuilder& b, int x, float s);
int relu(GraphBuilder& b, int x);
int sigmoid(GraphBuilder& b, int x);
int clip(GraphBuilder& b, int x, float lo, float hi);
int clip_min(GraphBuilder& b, int x, float lo);
int cast(GraphBuilder& b, int x, DType to);
// Rounds an f32 value to the nearest bf16 and back (what an explicit .to(torch.bfloat16) does).
int round_to_bf16(GraphBuilder& b, int x);

int reshape(GraphBuilder& b, int x, const Shape& shape);
int transpose(GraphBuilder& b, int x, const std::vector<int64_t>& perm);
int slice(GraphBuilder& b, int x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
int concat(GraphBuilder& b, const std::vector<int>& xs, int64_t axis);
int unsqueeze(GraphBuilder& b, int x, const std::vector<int64_t>& axes);
int squeeze(GraphBuilder& b, int x, const std::vector<int64_t>& axes);
int gather(GraphBuilder& b, int data, int indices, int64_t axis);
int expand(GraphBuilder& b, int x, const Shape& shape);
std::vector<int> split(GraphBuilder& b, int x, int64_t axis, const std::vector<int64_t>& sizes);
int identity(GraphBuilder& b, int x);

// ---- standard layers -----------------------------------------------------------------------------
// y = x @ W^T + b with torch layout W [out, in] (prefix.weight / prefix.bias).
int linear(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, bool has_bias = true);
// Same with explicit tensors (for sliced packed projections). bias may be undefined.
int linear_t(GraphBuilder& b, int x, const Tensor& weight, const Tensor& bias, const std::string& name);
int layer_norm(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, float eps = 1e-5f);
int gelu_erf(GraphBuilder& b, int x);
// sam3 MLP (model_misc.MLP): prefix.layers.{i}, ReLU between layers, none after the last.
int mlp(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int num_layers);

// Conv2d / ConvTranspose2d with torch layouts (prefix.weight, prefix.bias if present in weights).
int conv2d(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int stride = 1, int pad = 0,
           int groups = 1);
int conv_transpose2d(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int stride);
// nn.GroupNorm(groups, C) on NCHW (pattern above).
int group_norm(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int groups, float eps = 1e-5f);
// Nearest upsampling to (h, w) as F.interpolate(mode="nearest"): Resize asymmetric/floor.
int resize_nearest(GraphBuilder& b, int x, int64_t out_h, int64_t out_w);
// model_misc.inverse_sigmoid: log(clamp(x,eps) / clamp(1-x,eps)) after clamping x to [0,1].
int inverse_sigmoid(GraphBuilder& b, int x, float eps = 1e-3f);

// ---- attention -----------------------------------------------------------------------------------
// Additive float bias from a bool mask (True = masked): Where(mask, -inf, 0).
int mask_to_bias(GraphBuilder& b, int mask);
// (L,B,D) [seq_first] or (B,L,D) -> (B,H,L,hd).
int split_heads(GraphBuilder& b, int x, int heads, bool seq_first);
// (B,H,L,hd) -> (L,B,D) [seq_first] or (B,L,D).
int merge_heads(GraphBuilder& b, int x, bool seq_first);
// softmax(q k^T / sqrt(hd) + bias) v on [..., L, hd] tensors; bias -1 for none (must broadcast to
// [..., Lq, Lk]).
int sdpa(GraphBuilder& b, int q, int k, int v, int bias = -1);

struct MhaOptions {
  int heads = 8;
  bool seq_first = true;      // (L,B,D) in and out; else (B,L,D)
  int key_padding_mask = -1;  // bool (B, Lk), True = pad
  int attn_bias = -1;         // float additive bias broadcastable to (B, H, Lq, Lk)
};
// nn.MultiheadAttention / model_misc.MultiheadAttention with packed in_proj_weight [3D, D] and
// in_proj_bias (or separate q_proj_weight/k_proj_weight/v_proj_weight), out_proj.
int multihead_attention(GraphBuilder& b, const Weights& w, const std::string& prefix, int query, int key, int value,
                        const MhaOptions& opt);

// ---- position encodings (computed in C++, exact float32 arithmetic of the official code) ----------
// sam3 compute_axial_cis: 2-D axial RoPE for head_dim `dim` on an end_x x end_y grid; row-major
// tokens (x fastest). Returns cos (real) and sin (imag), each [end_x*end_y, dim/2] f32.
struct RopeTables {
  Tensor cos, sin;
};
RopeTables axial_rope_tables(int dim, int end_x, int end_y, float theta = 10000.0f, float scale_pos = 1.0f);
// Tiles the tables `repeat` times along the token axis (RoPE on keys of several memory frames).
RopeTables tile_rope_tables(const RopeTables& t, int repeat);
// Applies RoPE to x [..., L, hd] with tables [L, hd/2] (pattern above).
int apply_rope(GraphBuilder& b, int x, const RopeTables& tables, const std::string& name = "rope");

// PositionEmbeddingSine(num_pos_feats, temperature, normalize=True, scale=2*pi) on an h x w map:
// [1, num_pos_feats, h, w] (first half y, second half x). num_pos_feats = the constructor argument.
Tensor sine_position_encoding(int num_pos_feats, int h, int w, float temperature = 10000.0f);
// model_misc.gen_sineembed_for_position on a graph value [..., 2|4] -> [..., num_feats/2 * (2|4)],
// order (y, x[, w, h]).
int sine_embed_for_position(GraphBuilder& b, int pos, int num_feats);

}  // namespace segmux::sam31::layers
