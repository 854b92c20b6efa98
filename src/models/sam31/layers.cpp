#include "models/sam31/layers.h"

#include "ir/schemas/schemas.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace segmux::sam31::layers {

namespace {

// [out, in] -> [in, out] copy.
Tensor transpose_2d(const Tensor& w_in) {
  Tensor w = as_f32(w_in);
  SEGMUX_CHECK(w.rank() == 2, "linear weight must be 2-D, got ", shape_str(w.shape()));
  const int64_t out = w.dim(0), in = w.dim(1);
  Tensor t(DType::f32, {in, out});
  const float* src = w.data<float>();
  float* dst = t.data<float>();
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) dst[i * out + o] = src[o * in + i];
  return t;
}

// Rows [begin, end) of a tensor along its first axis (copy).
Tensor rows(const Tensor& t_in, int64_t begin, int64_t end) {
  Tensor t = as_f32(t_in);
  Shape s = t.shape();
  SEGMUX_CHECK(!s.empty() && begin >= 0 && end <= s[0] && begin < end, "cannot take rows ", begin, "..", end,
               " of a tensor ", shape_str(s));
  const int64_t row = s[0] == 0 ? 0 : t.numel() / s[0];
  s[0] = end - begin;
  Tensor r(DType::f32, s);
  std::memcpy(r.data<float>(), t.data<float>() + begin * row, size_t(r.numel()) * sizeof(float));
  return r;
}

constexpr double kPi = 3.14159265358979323846;

}  // namespace

// ---- constants and small tensor ops -------------------------------------------------------------

int param(GraphBuilder& b, const Weights& w, const std::string& key) { return b.constant(w.get(key), key); }

int const_tensor(GraphBuilder& b, const Tensor& t, const std::string& name) { return b.constant(t, name); }

int const_f32(GraphBuilder& b, const Shape& shape, const std::vector<float>& values, const std::string& name) {
  return b.constant(Tensor::from_vector<float>(shape, values), name);
}

int scalar(GraphBuilder& b, float v) { return b.scalar_f32(v); }
int ints(GraphBuilder& b, const std::vector<int64_t>& v) { return b.ints(v); }

int add(GraphBuilder& b, int x, int y) { return b.op1("Add", {x, y}); }
int sub(GraphBuilder& b, int x, int y) { return b.op1("Sub", {x, y}); }
int mul(GraphBuilder& b, int x, int y) { return b.op1("Mul", {x, y}); }
int div(GraphBuilder& b, int x, int y) { return b.op1("Div", {x, y}); }
int add_scalar(GraphBuilder& b, int x, float s) { return add(b, x, scalar(b, s)); }
int mul_scalar(GraphBuilder& b, int x, float s) { return mul(b, x, scalar(b, s)); }
int relu(GraphBuilder& b, int x) { return b.op1("Relu", {x}); }
int sigmoid(GraphBuilder& b, int x) { return b.op1("Sigmoid", {x}); }
int clip(GraphBuilder& b, int x, float lo, float hi) { return b.op1("Clip", {x, scalar(b, lo), scalar(b, hi)}); }
int clip_min(GraphBuilder& b, int x, float lo) { return b.op1("Clip", {x, scalar(b, lo)}); }
int cast(GraphBuilder& b, int x, DType to) {
  return b.op1("Cast", {x}, {{"to", ir::AttrValue(ir::dtype_to_onnx(to))}});
}
int round_to_bf16(GraphBuilder& b, int x) { return cast(b, cast(b, x, DType::bf16), DType::f32); }

int reshape(GraphBuilder& b, int x, const Shape& shape) { return b.op1("Reshape", {x, ints(b, shape)}); }
int transpose(GraphBuilder& b, int x, const std::vector<int64_t>& perm) {
  return b.op1("Transpose", {x}, {{"perm", ir::AttrValue(perm)}});
}
int slice(GraphBuilder& b, int x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  return b.op1("Slice", {x, ints(b, {start}), ints(b, {end}), ints(b, {axis}), ints(b, {step})});
}
int concat(GraphBuilder& b, const std::vector<int>& xs, int64_t axis) {
  if (xs.size() == 1) return xs[0];
  return b.op1("Concat", xs, {{"axis", ir::AttrValue(axis)}});
}
int unsqueeze(GraphBuilder& b, int x, const std::vector<int64_t>& axes) {
  return b.op1("Unsqueeze", {x, ints(b, axes)});
}
int squeeze(GraphBuilder& b, int x, const std::vector<int64_t>& axes) { return b.op1("Squeeze", {x, ints(b, axes)}); }
int gather(GraphBuilder& b, int data, int indices, int64_t axis) {
  return b.op1("Gather", {data, indices}, {{"axis", ir::AttrValue(axis)}});
}
int expand(GraphBuilder& b, int x, const Shape& shape) { return b.op1("Expand", {x, ints(b, shape)}); }
std::vector<int> split(GraphBuilder& b, int x, int64_t axis, const std::vector<int64_t>& sizes) {
  return b.op("Split", {x, ints(b, sizes)}, {{"axis", ir::AttrValue(axis)}}, int(sizes.size()));
}
int identity(GraphBuilder& b, int x) { return b.op1("Identity", {x}); }

// ---- standard layers -----------------------------------------------------------------------------

int linear_t(GraphBuilder& b, int x, const Tensor& weight, const Tensor& bias, const std::string& name) {
  const Shape& xs = b.shape(x);
  SEGMUX_CHECK(weight.rank() == 2 && !xs.empty() && xs.back() == weight.dim(1), "linear '", name, "': input ",
               shape_str(xs), " does not match weight ", shape_str(weight.shape()));
  int y = b.op1("MatMul", {x, b.constant(transpose_2d(weight), name + ".weight_t")});
  if (bias.defined()) y = add(b, y, b.constant(as_f32(bias), name + ".bias"));
  return y;
}

int linear(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, bool has_bias) {
  Tensor bias;
  if (has_bias) bias = w.get(prefix + ".bias");
  return linear_t(b, x, w.get(prefix + ".weight"), bias, prefix);
}

int layer_norm(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, float eps) {
  return b.op1("LayerNormalization", {x, param(b, w, prefix + ".weight"), param(b, w, prefix + ".bias")},
               {{"axis", ir::AttrValue(int64_t(-1))}, {"epsilon", ir::AttrValue(eps)}});
}

int gelu_erf(GraphBuilder& b, int x) {
  int e = b.op1("Erf", {div(b, x, scalar(b, float(std::sqrt(2.0))))});
  return mul_scalar(b, mul(b, x, add_scalar(b, e, 1.0f)), 0.5f);
}

int mlp(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int num_layers) {
  for (int i = 0; i < num_layers; ++i) {
    x = linear(b, w, x, prefix + ".layers." + std::to_string(i));
    if (i < num_layers - 1) x = relu(b, x);
  }
  return x;
}

int conv2d(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int stride, int pad, int groups) {
  const Tensor& wt = w.get(prefix + ".weight");
  SEGMUX_CHECK(wt.rank() == 4, "conv weight '", prefix, ".weight' must be 4-D, got ", shape_str(wt.shape()));
  std::vector<int> in = {x, param(b, w, prefix + ".weight")};
  if (w.has(prefix + ".bias")) in.push_back(param(b, w, prefix + ".bias"));
  return b.op1("Conv", in,
               {{"kernel_shape", ir::AttrValue(std::vector<int64_t>{wt.dim(2), wt.dim(3)})},
                {"strides", ir::AttrValue(std::vector<int64_t>{stride, stride})},
                {"pads", ir::AttrValue(std::vector<int64_t>{pad, pad, pad, pad})},
                {"dilations", ir::AttrValue(std::vector<int64_t>{1, 1})},
                {"group", ir::AttrValue(int64_t(groups))}});
}

int conv_transpose2d(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int stride) {
  const Tensor& wt = w.get(prefix + ".weight");
  SEGMUX_CHECK(wt.rank() == 4, "conv-transpose weight '", prefix, ".weight' must be 4-D");
  std::vector<int> in = {x, param(b, w, prefix + ".weight")};
  if (w.has(prefix + ".bias")) in.push_back(param(b, w, prefix + ".bias"));
  return b.op1("ConvTranspose", in,
               {{"kernel_shape", ir::AttrValue(std::vector<int64_t>{wt.dim(2), wt.dim(3)})},
                {"strides", ir::AttrValue(std::vector<int64_t>{stride, stride})},
                {"pads", ir::AttrValue(std::vector<int64_t>{0, 0, 0, 0})},
                {"dilations", ir::AttrValue(std::vector<int64_t>{1, 1})},
                {"group", ir::AttrValue(int64_t(1))}});
}

int group_norm(GraphBuilder& b, const Weights& w, int x, const std::string& prefix, int groups, float eps) {
  const Shape s = b.shape(x);
  SEGMUX_CHECK(s.size() == 4 && s[1] % groups == 0, "group_norm '", prefix, "': input ", shape_str(s),
               " does not split into ", groups, " groups");
  int g = reshape(b, x, {s[0], groups, -1});
  std::vector<float> ones(static_cast<size_t>(groups), 1.0f), zeros(static_cast<size_t>(groups), 0.0f);
  g = b.op1("InstanceNormalization",
            {g, const_f32(b, {groups}, ones, prefix + ".gn_one"), const_f32(b, {groups}, zeros, prefix + ".gn_zero")},
            {{"epsilon", ir::AttrValue(eps)}});
  g = reshape(b, g, s);
  int gamma = b.constant(as_f32(w.get(prefix + ".weight")).reshaped({s[1], 1, 1}), prefix + ".weight");
  int beta = b.constant(as_f32(w.get(prefix + ".bias")).reshaped({s[1], 1, 1}), prefix + ".bias");
  return add(b, mul(b, g, gamma), beta);
}

int resize_nearest(GraphBuilder& b, int x, int64_t out_h, int64_t out_w) {
  const Shape s = b.shape(x);
  SEGMUX_CHECK(s.size() == 4, "resize_nearest needs NCHW, got ", shape_str(s));
  return b.op1("Resize", {x, -1, -1, ints(b, {s[0], s[1], out_h, out_w})},
               {{"mode", ir::AttrValue(std::string("nearest"))},
                {"coordinate_transformation_mode", ir::AttrValue(std::string("asymmetric"))},
                {"nearest_mode", ir::AttrValue(std::string("floor"))}});
}

int inverse_sigmoid(GraphBuilder& b, int x, float eps) {
  x = clip(b, x, 0.0f, 1.0f);
  int x1 = clip_min(b, x, eps);
  int x2 = clip_min(b, b.op1("Sub", {scalar(b, 1.0f), x}), eps);
  return b.op1("Log", {div(b, x1, x2)});
}

// ---- attention -----------------------------------------------------------------------------------

int mask_to_bias(GraphBuilder& b, int mask) {
  return b.op1("Where", {mask, scalar(b, -std::numeric_limits<float>::infinity()), scalar(b, 0.0f)});
}

int split_heads(GraphBuilder& b, int x, int heads, bool seq_first) {
  const Shape s = b.shape(x);
  SEGMUX_CHECK(s.size() == 3 && s[2] % heads == 0, "split_heads: ", shape_str(s), " into ", heads, " heads");
  const int64_t hd = s[2] / heads;
  x = reshape(b, x, {s[0], s[1], heads, hd});
  return transpose(b, x, seq_first ? std::vector<int64_t>{1, 2, 0, 3} : std::vector<int64_t>{0, 2, 1, 3});
}

int merge_heads(GraphBuilder& b, int x, bool seq_first) {
  const Shape s = b.shape(x);  // B,H,L,hd
  SEGMUX_CHECK(s.size() == 4, "merge_heads needs (B,H,L,hd), got ", shape_str(s));
  if (seq_first) return reshape(b, transpose(b, x, {2, 0, 1, 3}), {s[2], s[0], s[1] * s[3]});
  return reshape(b, transpose(b, x, {0, 2, 1, 3}), {s[0], s[2], s[1] * s[3]});
}

int sdpa(GraphBuilder& b, int q, int k, int v, int bias) {
  const Shape qs = b.shape(q);
  const int64_t r = int64_t(qs.size());
  SEGMUX_CHECK(r >= 2, "sdpa needs [..., L, hd] tensors");
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(r - 1)], perm[size_t(r - 2)]);
  int s = b.op1("MatMul", {q, transpose(b, k, perm)});
  s = mul_scalar(b, s, float(1.0 / std::sqrt(double(qs.back()))));
  if (bias >= 0) s = add(b, s, bias);
  int p = b.op1("Softmax", {s}, {{"axis", ir::AttrValue(int64_t(-1))}});
  return b.op1("MatMul", {p, v});
}

int multihead_attention(GraphBuilder& b, const Weights& w, const std::string& prefix, int query, int key, int value,
                        const MhaOptions& opt) {
  const Shape qs = b.shape(query);
  SEGMUX_CHECK(qs.size() == 3, "attention '", prefix, "': query must be 3-D, got ", shape_str(qs));
  const int64_t d = qs[2];
  Tensor wq, wk, wv, bq, bk, bv;
  if (w.has(prefix + ".in_proj_weight")) {
    const Tensor& win = w.get(prefix + ".in_proj_weight");
    SEGMUX_CHECK(win.rank() == 2 && win.dim(0) == 3 * d, "attention '", prefix, "': in_proj_weight ",
                 shape_str(win.shape()), " does not match width ", d);
    wq = rows(win, 0, d), wk = rows(win, d, 2 * d), wv = rows(win, 2 * d, 3 * d);
  } else {
    wq = w.get(prefix + ".q_proj_weight"), wk = w.get(prefix + ".k_proj_weight"), wv = w.get(prefix + ".v_proj_weight");
  }
  if (w.has(prefix + ".in_proj_bias")) {
    const Tensor& bin = w.get(prefix + ".in_proj_bias");
    bq = rows(bin, 0, d), bk = rows(bin, d, 2 * d), bv = rows(bin, 2 * d, 3 * d);
  }
  int q = linear_t(b, query, wq, bq, prefix + ".q");
  int k = linear_t(b, key, wk, bk, prefix + ".k");
  int v = linear_t(b, value, wv, bv, prefix + ".v");
  q = split_heads(b, q, opt.heads, opt.seq_first);
  k = split_heads(b, k, opt.heads, opt.seq_first);
  v = split_heads(b, v, opt.heads, opt.seq_first);
  int bias = opt.attn_bias;
  if (opt.key_padding_mask >= 0) {
    const Shape ms = b.shape(opt.key_padding_mask);
    SEGMUX_CHECK(ms.size() == 2, "attention '", prefix, "': key padding mask must be (B, Lk)");
    int kp = reshape(b, mask_to_bias(b, opt.key_padding_mask), {ms[0], 1, 1, ms[1]});
    bias = bias >= 0 ? add(b, bias, kp) : kp;
  }
  int o = merge_heads(b, sdpa(b, q, k, v, bias), opt.seq_first);
  return linear(b, w, o, prefix + ".out_proj");
}

// ---- position encodings --------------------------------------------------------------------------

RopeTables axial_rope_tables(int dim, int end_x, int end_y, float theta, float scale_pos) {
  SEGMUX_CHECK(dim > 0 && dim % 4 == 0 && end_x > 0 && end_y > 0, "axial RoPE needs dim % 4 == 0, got ", dim);
  const int nf = dim / 4;
  std::vector<float> freqs(static_cast<size_t>(nf));
  for (int i = 0; i < nf; ++i) {
    // torch: 1.0 / (theta ** (arange(0, dim, 4).float() / dim)) in float32
    float e = float(4 * i) / float(dim);
    freqs[size_t(i)] = 1.0f / std::pow(theta, e);
  }
  const int64_t n = int64_t(end_x) * end_y;
  RopeTables t{Tensor(DType::f32, {n, 2 * nf}), Tensor(DType::f32, {n, 2 * nf})};
  float* c = t.cos.data<float>();
  float* s = t.sin.data<float>();
  for (int64_t p = 0; p < n; ++p) {
    const float tx = float(p % end_x) * scale_pos;
    const float ty = float(p / end_x) * scale_pos;
    for (int i = 0; i < nf; ++i) {
      const float ax = tx * freqs[size_t(i)];
      const float ay = ty * freqs[size_t(i)];
      c[p * 2 * nf + i] = float(std::cos(double(ax)));
      s[p * 2 * nf + i] = float(std::sin(double(ax)));
      c[p * 2 * nf + nf + i] = float(std::cos(double(ay)));
      s[p * 2 * nf + nf + i] = float(std::sin(double(ay)));
    }
  }
  return t;
}

RopeTables tile_rope_tables(const RopeTables& t, int repeat) {
  SEGMUX_CHECK(repeat >= 1, "tile_rope_tables: repeat must be >= 1");
  const int64_t n = t.cos.dim(0), w = t.cos.dim(1);
  RopeTables r{Tensor(DType::f32, {n * repeat, w}), Tensor(DType::f32, {n * repeat, w})};
  for (int k = 0; k < repeat; ++k) {
    std::memcpy(r.cos.data<float>() + k * n * w, t.cos.data<float>(), size_t(n * w) * sizeof(float));
    std::memcpy(r.sin.data<float>() + k * n * w, t.sin.data<float>(), size_t(n * w) * sizeof(float));
  }
  return r;
}

int apply_rope(GraphBuilder& b, int x, const RopeTables& tables, const std::string& name) {
  const Shape s = b.shape(x);
  SEGMUX_CHECK(s.size() >= 2, "apply_rope needs [..., L, hd]");
  const int64_t L = s[s.size() - 2], hd = s.back();
  SEGMUX_CHECK(tables.cos.dim(0) == L && tables.cos.dim(1) * 2 == hd, "apply_rope '", name, "': tables ",
               shape_str(tables.cos.shape()), " do not fit ", shape_str(s));
  Shape pairs = s;
  pairs.back() = hd / 2;
  pairs.push_back(2);
  int xp = reshape(b, x, pairs);
  auto parts = split(b, xp, -1, {1, 1});
  int cosv = b.constant(tables.cos.reshaped({L, hd / 2, 1}), name + ".cos");
  int sinv = b.constant(tables.sin.reshaped({L, hd / 2, 1}), name + ".sin");
  int re = sub(b, mul(b, parts[0], cosv), mul(b, parts[1], sinv));
  int im = add(b, mul(b, parts[0], sinv), mul(b, parts[1], cosv));
  return reshape(b, concat(b, {re, im}, -1), s);
}

Tensor sine_position_encoding(int num_pos_feats, int h, int w, float temperature) {
  SEGMUX_CHECK(num_pos_feats > 0 && num_pos_feats % 4 == 0 && h > 0 && w > 0,
               "sine position encoding needs num_pos_feats % 4 == 0 and a non-empty map");
  const int npf = num_pos_feats / 2;
  const float scale = float(2.0 * kPi);
  const float eps = 1e-6f;
  std::vector<float> dim_t(static_cast<size_t>(npf));
  for (int i = 0; i < npf; ++i) dim_t[size_t(i)] = std::pow(temperature, float(2 * (i / 2)) / float(npf));
  Tensor t(DType::f32, {1, num_pos_feats, h, w});
  float* o = t.data<float>();
  for (int y = 0; y < h; ++y) {
    const float ye = float(y + 1) / (float(h) + eps) * scale;
    for (int x = 0; x < w; ++x) {
      const float xe = float(x + 1) / (float(w) + eps) * scale;
      for (int i = 0; i < npf; ++i) {
        const float py = ye / dim_t[size_t(i)];
        const float px = xe / dim_t[size_t(i)];
        const float vy = float(i % 2 == 0 ? std::sin(double(py)) : std::cos(double(py)));
        const float vx = float(i % 2 == 0 ? std::sin(double(px)) : std::cos(double(px)));
        o[(int64_t(i) * h + y) * w + x] = vy;
        o[(int64_t(npf + i) * h + y) * w + x] = vx;
      }
    }
  }
  return t;
}

int sine_embed_for_position(GraphBuilder& b, int pos, int num_feats) {
  const Shape s = b.shape(pos);
  SEGMUX_CHECK(!s.empty() && (s.back() == 2 || s.back() == 4) && num_feats % 2 == 0,
               "sine_embed_for_position needs [..., 2|4] positions");
  const int nf = num_feats / 2;
  std::vector<float> dim_t(static_cast<size_t>(nf));
  std::vector<uint8_t> even(static_cast<size_t>(nf));
  for (int i = 0; i < nf; ++i) {
    dim_t[size_t(i)] = std::pow(10000.0f, float(2 * (i / 2)) / float(nf));
    even[size_t(i)] = i % 2 == 0;
  }
  Tensor even_t(DType::boolean, {nf});
  for (int i = 0; i < nf; ++i) even_t.data<bool>()[i] = even[size_t(i)] != 0;
  int p = unsqueeze(b, mul_scalar(b, pos, float(2.0 * kPi)), {-1});  // [..., c, 1]
  p = div(b, p, const_f32(b, {nf}, dim_t, "sine_dim_t"));            // [..., c, nf]
  int e = b.op1("Where", {b.constant(even_t, "sine_even"), b.op1("Sin", {p}), b.op1("Cos", {p})});
  // Coordinate order of the output: y, x (, w, h).
  std::vector<int64_t> order = s.back() == 2 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{1, 0, 2, 3};
  e = gather(b, e, ints(b, order), -2);
  Shape out = s;
  out.back() = s.back() * nf;
  return reshape(b, e, out);
}

}  // namespace segmux::sam31::layers
