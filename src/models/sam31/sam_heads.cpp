// SAM building blocks shared by the tracker candidates (see sam_heads.h). Official sources:
// sam/transformer.py (Attention, TwoWayTransformer), sam/prompt_encoder.py (PositionEmbeddingRandom),
// sam/common.py (LayerNorm2d).
#include "models/sam31/sam_heads.h"

#include <cmath>

#include "models/sam31/layers.h"

namespace segmux::sam31 {

using ir::GraphBuilder;
using ir::Scope;
using namespace layers;

Tensor random_fourier_dense_pe(const Tensor& gaussian_matrix, int64_t g) {
  const Tensor gm = as_f32(gaussian_matrix);
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

int sam_attention(GraphBuilder& b, const Weights& w, const std::string& p, int q, int k, int v, int heads,
                  int key_bias) {
  Scope s(b, p.substr(p.rfind('.') + 1));
  int qh = split_heads(b, linear(b, w, q, p + ".q_proj"), heads, false);
  int kh = split_heads(b, linear(b, w, k, p + ".k_proj"), heads, false);
  int vh = split_heads(b, linear(b, w, v, p + ".v_proj"), heads, false);
  int o = merge_heads(b, sdpa(b, qh, kh, vh, key_bias), false);
  return linear(b, w, o, p + ".out_proj");
}

TwoWayResult two_way_transformer(GraphBuilder& b, const Weights& w, const std::string& tw, int tokens, int keys,
                                 int key_pe, int depth, int heads, int token_key_bias) {
  int queries = tokens;
  for (int l = 0; l < depth; ++l) {
    Scope sl(b, "twoway" + std::to_string(l));
    const std::string p = tw + ".layers." + std::to_string(l);
    if (l == 0) {  // skip_first_layer_pe: no residual, no positional add
      queries = sam_attention(b, w, p + ".self_attn", queries, queries, queries, heads, token_key_bias);
    } else {
      int q = add(b, queries, tokens);
      queries = add(b, queries, sam_attention(b, w, p + ".self_attn", q, q, queries, heads, token_key_bias));
    }
    queries = layer_norm(b, w, queries, p + ".norm1", 1e-5f);
    int q = add(b, queries, tokens), k = add(b, keys, key_pe);
    queries = add(b, queries, sam_attention(b, w, p + ".cross_attn_token_to_image", q, k, keys, heads));
    queries = layer_norm(b, w, queries, p + ".norm2", 1e-5f);
    int m = linear(b, w, relu(b, linear(b, w, queries, p + ".mlp.lin1")), p + ".mlp.lin2");
    queries = layer_norm(b, w, add(b, queries, m), p + ".norm3", 1e-5f);
    q = add(b, queries, tokens);
    k = add(b, keys, key_pe);
    keys = add(b, keys, sam_attention(b, w, p + ".cross_attn_image_to_token", k, q, queries, heads, token_key_bias));
    keys = layer_norm(b, w, keys, p + ".norm4", 1e-5f);
  }
  int q = add(b, queries, tokens), k = add(b, keys, key_pe);
  queries = add(b, queries, sam_attention(b, w, tw + ".final_attn_token_to_image", q, k, keys, heads));
  queries = layer_norm(b, w, queries, tw + ".norm_final_attn", 1e-5f);
  return {queries, keys};
}

int layer_norm_2d(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, float eps) {
  Scope s(b, "layer_norm_2d");
  int u = b.op1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}});
  int xc = sub(b, x, u);
  int var = b.op1("ReduceMean", {mul(b, xc, xc)}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}});
  int y = div(b, xc, b.op1("Sqrt", {add(b, var, b.scalar_f32(eps))}));
  const Tensor& wt = w.get(prefix + ".weight");
  Tensor wr = as_f32(wt).reshaped({1, wt.numel(), 1, 1}).clone();
  Tensor br = as_f32(w.get(prefix + ".bias")).reshaped({1, wt.numel(), 1, 1}).clone();
  return add(b, mul(b, b.constant(wr, "weight"), y), b.constant(br, "bias"));
}

int conv_transpose_2x2(GraphBuilder& b, const Weights& w, const std::string& name, int tokens, int64_t h, int64_t wd) {
  Scope s(b, name);
  Tensor wt = as_f32(w.get(name + ".weight"));  // (Cin, Cout, 2, 2)
  SEGMUX_CHECK(wt.rank() == 4 && wt.dim(2) == 2 && wt.dim(3) == 2, name, ": expected a 2x2 transposed conv");
  const int64_t cin = wt.dim(0), cout = wt.dim(1);
  Tensor wm = wt.reshaped({cin, cout * 4});  // [in, o*4 + a*2 + c] is already the memory order
  int y = b.op1("MatMul", {tokens, b.constant(wm.clone(), "weight")});
  y = reshape(b, y, {1, h, wd, cout, 2, 2});
  y = transpose(b, y, {0, 3, 1, 4, 2, 5});
  y = reshape(b, y, {1, cout, 2 * h, 2 * wd});
  Tensor bias = as_f32(w.get(name + ".bias")).reshaped({1, cout, 1, 1});
  return add(b, y, b.constant(bias.clone(), "bias"));
}

int prompt_mask_embedding(GraphBuilder& b, const Weights& w, const std::string& pe, int mask) {
  Scope s(b, "mask_downscaling");
  auto ln2d = [&](int x, const std::string& prefix) {
    int t = transpose(b, x, {0, 2, 3, 1});
    t = layer_norm(b, w, t, prefix, 1e-6f);
    return transpose(b, t, {0, 3, 1, 2});
  };
  int m = gelu_erf(b, ln2d(conv2d(b, w, mask, pe + ".mask_downscaling.0", 2), pe + ".mask_downscaling.1"));
  m = gelu_erf(b, ln2d(conv2d(b, w, m, pe + ".mask_downscaling.3", 2), pe + ".mask_downscaling.4"));
  return conv2d(b, w, m, pe + ".mask_downscaling.6");
}

}  // namespace segmux::sam31
