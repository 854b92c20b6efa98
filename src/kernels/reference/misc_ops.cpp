// Reference kernels of the less common ops: quantization, NonMaxSuppression, GridSample, LRN,
// MaxUnpool, Det, BitShift, Unique and the opset-17 window functions.
#include <algorithm>
#include <map>
#include <numeric>

#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

// ---- quantization ---------------------------------------------------------------------------------

// Per-tensor (scalar) or per-axis (1-D) quantization parameters, expanded over x's shape.
std::vector<double> per_axis(const KernelContext& ctx, const Tensor* p, const Shape& x, int64_t axis, double def) {
  const int64_t n = shape_numel(x);
  std::vector<double> out(static_cast<size_t>(n), def);
  if (!p) return out;
  std::vector<double> v = doubles_of(*p);
  if (v.size() == 1) {
    std::fill(out.begin(), out.end(), v[0]);
    return out;
  }
  if (p->rank() != 1 || x.empty()) kfail(ctx, "quantization parameters must be scalars or 1-D");
  const int64_t a = axis_of(ctx, axis, int64_t(x.size()));
  if (int64_t(v.size()) != x[size_t(a)])
    kfail(ctx, "per-axis parameters have ", v.size(), " values, axis has ", x[size_t(a)]);
  int64_t inner = 1;
  for (size_t d = size_t(a) + 1; d < x.size(); ++d) inner *= x[d];
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = v[size_t((i / inner) % x[size_t(a)])];
  return out;
}

double saturate_q(DType t, double v) {
  return t == DType::u8 ? std::clamp(v, 0.0, 255.0) : std::clamp(v, -128.0, 127.0);
}

void quantize_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t axis = ctx.node.attr_int("axis", 1);
  std::vector<double> scale = per_axis(ctx, &in(ctx, 1), x.shape(), axis, 1.0);
  std::vector<double> zp = per_axis(ctx, has_in(ctx, 2) ? &in(ctx, 2) : nullptr, x.shape(), axis, 0.0);
  std::vector<double> v = doubles_of(x);
  for (size_t i = 0; i < v.size(); ++i) {
    // Division in float, rounding half to even, as ONNX specifies.
    const float q = float(v[i]) / float(scale[i]);
    y.set_from_double(int64_t(i), saturate_q(y.dtype(), std::nearbyint(double(q)) + zp[i]));
  }
}

void dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t axis = ctx.node.attr_int("axis", 1);
  std::vector<double> scale = per_axis(ctx, &in(ctx, 1), x.shape(), axis, 1.0);
  std::vector<double> zp = per_axis(ctx, has_in(ctx, 2) ? &in(ctx, 2) : nullptr, x.shape(), axis, 0.0);
  std::vector<double> v = doubles_of(x);
  for (size_t i = 0; i < v.size(); ++i) y.set_from_double(int64_t(i), double(float(v[i] - zp[i]) * float(scale[i])));
}

void dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  std::vector<double> v = doubles_of(x);
  double lo = 0, hi = 0;
  for (double e : v) {
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  const float scale = float(hi - lo) / 255.0f;
  const double zp = scale == 0 ? 0.0 : std::clamp(std::nearbyint(double(0.0f - float(lo) / scale)), 0.0, 255.0);
  Tensor& y = out(ctx, 0);
  for (size_t i = 0; i < v.size(); ++i)
    y.set_from_double(int64_t(i),
                      scale == 0 ? zp : std::clamp(std::nearbyint(double(float(v[i]) / scale)) + zp, 0.0, 255.0));
  out(ctx, 1).data<float>()[0] = scale;
  out(ctx, 2).data<uint8_t>()[0] = uint8_t(zp);
}

// x - zero_point as an f64 tensor; the zero point is a scalar or one value per row (axis `axis`).
Tensor minus_zero_point(const KernelContext& ctx, const Tensor& x, const Tensor* zp, int64_t axis) {
  Tensor out(DType::f64, x.shape());
  std::vector<double> z = per_axis(ctx, zp, x.shape(), axis, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) out.data<double>()[i] = x.get_as_double(i) - z[size_t(i)];
  return out;
}

const Tensor* opt(const KernelContext& ctx, size_t i) { return has_in(ctx, i) ? &in(ctx, i) : nullptr; }

void matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& A = in(ctx, 0);
  const Tensor& B = in(ctx, 1);
  // a_zero_point is per row of A (axis -2 of a matrix), b_zero_point per column of B (axis -1).
  Tensor a = minus_zero_point(ctx, A, opt(ctx, 2), A.rank() >= 2 ? -2 : -1);
  Tensor b = minus_zero_point(ctx, B, opt(ctx, 3), -1);
  Tensor& Y = out(ctx, 0);
  Tensor acc(DType::f64, Y.shape());
  matmul_forward(ctx, a, b, acc);
  for (int64_t i = 0; i < Y.numel(); ++i) Y.data<int32_t>()[i] = int32_t(int64_t(acc.data<double>()[i]));
}

void qlinear_matmul_kernel(KernelContext& ctx) {
  const Tensor& A = in(ctx, 0);
  const Tensor& B = in(ctx, 3);
  Tensor a = minus_zero_point(ctx, A, &in(ctx, 2), A.rank() >= 2 ? -2 : -1);
  Tensor b = minus_zero_point(ctx, B, &in(ctx, 5), -1);
  Tensor& Y = out(ctx, 0);
  Tensor acc(DType::f64, Y.shape());
  matmul_forward(ctx, a, b, acc);
  std::vector<double> as = per_axis(ctx, &in(ctx, 1), acc.shape(), acc.rank() >= 2 ? -2 : -1, 1.0);
  std::vector<double> bs = per_axis(ctx, &in(ctx, 4), acc.shape(), -1, 1.0);
  const double ys = in(ctx, 6).get_as_double(0), yz = in(ctx, 7).get_as_double(0);
  for (int64_t i = 0; i < Y.numel(); ++i) {
    const double v = acc.data<double>()[i] * as[size_t(i)] * bs[size_t(i)] / ys;
    Y.set_from_double(i, saturate_q(Y.dtype(), std::nearbyint(v) + yz));
  }
}

void conv_integer_kernel(KernelContext& ctx) {
  Tensor x = minus_zero_point(ctx, in(ctx, 0), opt(ctx, 2), 1);
  Tensor w = minus_zero_point(ctx, in(ctx, 1), opt(ctx, 3), 0);
  Tensor& Y = out(ctx, 0);
  Tensor acc(DType::f64, Y.shape());
  conv_forward(ctx, x, w, nullptr, acc);
  for (int64_t i = 0; i < Y.numel(); ++i) Y.data<int32_t>()[i] = int32_t(int64_t(acc.data<double>()[i]));
}

void qlinear_conv_kernel(KernelContext& ctx) {
  Tensor x = minus_zero_point(ctx, in(ctx, 0), &in(ctx, 2), 1);
  Tensor w = minus_zero_point(ctx, in(ctx, 3), &in(ctx, 5), 0);
  Tensor& Y = out(ctx, 0);
  Tensor acc(DType::f64, Y.shape());
  conv_forward(ctx, x, w, opt(ctx, 8), acc);
  std::vector<double> ws = per_axis(ctx, &in(ctx, 4), acc.shape(), 1, 1.0);
  const double xs = in(ctx, 1).get_as_double(0), ys = in(ctx, 6).get_as_double(0), yz = in(ctx, 7).get_as_double(0);
  for (int64_t i = 0; i < Y.numel(); ++i) {
    const double v = acc.data<double>()[i] * xs * ws[size_t(i)] / ys;
    Y.set_from_double(i, saturate_q(Y.dtype(), std::nearbyint(v) + yz));
  }
}

// ---- NonMaxSuppression --------------------------------------------------------------------------------

void nms_kernel(KernelContext& ctx) {
  const Tensor& boxes_t = in(ctx, 0);
  const Tensor& scores_t = in(ctx, 1);
  const int64_t max_out = has_in(ctx, 2) && in(ctx, 2).numel() > 0 ? ints_of(ctx, in(ctx, 2))[0] : 0;
  const double iou_thr = has_in(ctx, 3) && in(ctx, 3).numel() > 0 ? in(ctx, 3).get_as_double(0) : 0.0;
  const bool has_score_thr = has_in(ctx, 4) && in(ctx, 4).numel() > 0;
  const double score_thr = has_score_thr ? in(ctx, 4).get_as_double(0) : 0.0;
  const bool center = ctx.node.attr_int("center_point_box", 0) != 0;
  const int64_t B = boxes_t.dim(0), N = boxes_t.dim(1), C = scores_t.dim(1);
  if (scores_t.dim(0) != B || scores_t.dim(2) != N) kfail(ctx, "scores must be [", B, ", classes, ", N, "]");
  std::vector<double> boxes = doubles_of(boxes_t), scores = doubles_of(scores_t);
  // Corners (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
  auto corners = [&](int64_t b, int64_t i) {
    const double* p = boxes.data() + (b * N + i) * 4;
    std::array<double, 4> c;
    if (center) {
      c = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    } else {
      c = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
    }
    return c;
  };
  auto iou = [](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ih = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    const double iw = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    const double inter = ih * iw;
    const double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return uni <= 0 ? 0.0 : inter / uni;
  };
  std::vector<int64_t> sel;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const double* s = scores.data() + (b * C + c) * N;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < N; ++i)
        if (!has_score_thr || s[i] > score_thr) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t k : kept)
          if (iou(corners(b, i), corners(b, k)) > iou_thr) {
            ok = false;
            break;
          }
        if (ok) kept.push_back(i);
      }
      for (int64_t k : kept) sel.insert(sel.end(), {b, c, k});
    }
  Tensor y(DType::i64, {int64_t(sel.size() / 3), 3});
  std::copy(sel.begin(), sel.end(), y.data<int64_t>());
  out(ctx, 0) = y;
}

// ---- GridSample (opset 16, torch semantics) ----------------------------------------------------------

double reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = std::fabs(x - lo);
  const double extra = std::fmod(x, span);
  const int64_t flips = int64_t(std::floor(x / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

void grid_sample_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  const Tensor& G = in(ctx, 1);
  Tensor& Y = out(ctx, 0);
  const std::string mode = ctx.node.attr_string("mode", "bilinear");
  const std::string pad = ctx.node.attr_string("padding_mode", "zeros");
  const bool ac = ctx.node.attr_int("align_corners", 0) != 0;
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), HO = Y.dim(2), WO = Y.dim(3);
  std::vector<double> x = doubles_of(X), g = doubles_of(G);
  auto unnormalize = [&](double v, int64_t size) {
    return ac ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
  };
  // Applies the padding rule to a coordinate (border: clip; reflection: mirror then clip).
  auto pad_coord = [&](double v, int64_t size) {
    if (pad == "border") return std::clamp(v, 0.0, double(size - 1));
    if (pad == "reflection") {
      v = ac ? reflect(v, 0, 2.0 * double(size - 1)) : reflect(v, -1, 2.0 * double(size) - 1);
      return std::clamp(v, 0.0, double(size - 1));
    }
    return v;
  };
  auto at = [&](const double* plane, int64_t yy, int64_t xx) {
    return (yy < 0 || yy >= H || xx < 0 || xx >= W) ? 0.0 : plane[yy * W + xx];
  };
  auto cubic = [](double t, std::array<double, 4>& w) {
    const double A = -0.75;
    auto c1 = [&](double s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };
    auto c2 = [&](double s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };
    w = {c2(t + 1), c1(t), c1(1 - t), c2(2 - t)};
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < HO; ++oh)
      for (int64_t ow = 0; ow < WO; ++ow) {
        const double* gp = g.data() + ((n * HO + oh) * WO + ow) * 2;
        double sx = unnormalize(gp[0], W), sy = unnormalize(gp[1], H);
        if (mode != "bicubic") {
          sx = pad_coord(sx, W);
          sy = pad_coord(sy, H);
        }
        for (int64_t c = 0; c < C; ++c) {
          const double* plane = x.data() + (n * C + c) * H * W;
          double v = 0;
          if (mode == "nearest") {
            v = at(plane, int64_t(std::nearbyint(sy)), int64_t(std::nearbyint(sx)));
          } else if (mode == "bilinear") {
            const double fx = std::floor(sx), fy = std::floor(sy);
            const double tx = sx - fx, ty = sy - fy;
            const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
            v = at(plane, y0, x0) * (1 - tx) * (1 - ty) + at(plane, y0, x0 + 1) * tx * (1 - ty) +
                at(plane, y0 + 1, x0) * (1 - tx) * ty + at(plane, y0 + 1, x0 + 1) * tx * ty;
          } else {
            const double fx = std::floor(sx), fy = std::floor(sy);
            std::array<double, 4> wx, wy;
            cubic(sx - fx, wx);
            cubic(sy - fy, wy);
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                double py = fy - 1 + i, px = fx - 1 + j;
                if (pad != "zeros") {
                  py = pad_coord(py, H);
                  px = pad_coord(px, W);
                }
                v += wy[size_t(i)] * wx[size_t(j)] * at(plane, int64_t(py), int64_t(px));
              }
          }
          Y.set_from_double(((n * C + c) * HO + oh) * WO + ow, v);
        }
      }
}

// ---- LRN, MaxUnpool, Det, BitShift ---------------------------------------------------------------------

void lrn_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  const double alpha = ctx.node.attr_float("alpha", 1e-4f), beta = ctx.node.attr_float("beta", 0.75f);
  const double bias = ctx.node.attr_float("bias", 1.0f);
  const int64_t size = ctx.node.attr_int("size", 1);
  const int64_t N = X.dim(0), C = X.dim(1);
  const int64_t inner = (N > 0 && C > 0) ? X.numel() / (N * C) : 0;
  std::vector<double> x = doubles_of(X);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(C - 1, c + hi); ++k) {
          const double v = x[size_t((n * C + k) * inner + i)];
          sum += v * v;
        }
        const int64_t o = (n * C + c) * inner + i;
        Y.set_from_double(o, x[size_t(o)] / std::pow(bias + alpha / double(size) * sum, beta));
      }
}

void max_unpool_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  std::vector<int64_t> idx = ints_of(ctx, in(ctx, 1));
  Tensor& Y = out(ctx, 0);
  if (int64_t(idx.size()) != X.numel()) kfail(ctx, "indices must have X's shape");
  if (Y.rank() != X.rank()) kfail(ctx, "output_shape must have X's rank");
  // Indices are flat positions in the default unpooled shape (what MaxPool's input was); with an
  // explicit output_shape each position keeps its coordinates in the larger output.
  const size_t r = size_t(X.rank()) - 2;
  std::vector<int64_t> k = ctx.node.attr_ints("kernel_shape");
  std::vector<int64_t> st = ctx.node.attr_ints("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = ctx.node.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || st.size() != r || pads.size() != 2 * r)
    kfail(ctx, "kernel_shape/strides/pads do not match the rank");
  Shape def{X.dim(0), X.dim(1)};
  for (size_t i = 0; i < r; ++i) def.push_back((X.shape()[i + 2] - 1) * st[i] + k[i] - pads[i] - pads[i + r]);
  const std::vector<int64_t> ds = contiguous_strides(def), ys = contiguous_strides(Y.shape());
  for (int64_t i = 0; i < X.numel(); ++i) {
    int64_t rem = idx[size_t(i)], o = 0;
    if (rem < 0 || rem >= shape_numel(def)) kfail(ctx, "index ", rem, " is out of range");
    for (size_t d = 0; d < def.size(); ++d) {
      const int64_t c = rem / ds[d];
      rem %= ds[d];
      if (c >= Y.shape()[d]) kfail(ctx, "output_shape is smaller than the unpooled shape");
      o += c * ys[d];
    }
    copy_elem(X, i, Y, o);
  }
}

void det_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  const int64_t m = X.dim(-1);
  const int64_t mats = Y.numel();
  std::vector<double> x = doubles_of(X);
  for (int64_t b = 0; b < mats; ++b) {
    std::vector<double> a(x.begin() + b * m * m, x.begin() + (b + 1) * m * m);
    double det = 1;
    for (int64_t c = 0; c < m; ++c) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[size_t(r * m + c)]) > std::fabs(a[size_t(piv * m + c)])) piv = r;
      if (a[size_t(piv * m + c)] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[size_t(c * m + k)], a[size_t(piv * m + k)]);
        det = -det;
      }
      det *= a[size_t(c * m + c)];
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[size_t(r * m + c)] / a[size_t(c * m + c)];
        for (int64_t k = c; k < m; ++k) a[size_t(r * m + k)] -= f * a[size_t(c * m + k)];
      }
    }
    Y.set_from_double(b, det);
  }
}

void bitshift_kernel(KernelContext& ctx) {
  const Tensor& a = in(ctx, 0);
  const Tensor& b = in(ctx, 1);
  Tensor& y = out(ctx, 0);
  const bool left = ctx.node.attr_string("direction", "") == "LEFT";
  const uint8_t* pa = a.data<uint8_t>();
  const uint8_t* pb = b.data<uint8_t>();
  uint8_t* py = y.data<uint8_t>();
  for_each_broadcast<2>(y.shape(), {a.shape(), b.shape()}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    const unsigned s = pb[o[1]];
    py[i] = s >= 8 ? 0 : uint8_t(left ? (unsigned(pa[o[0]]) << s) : (unsigned(pa[o[0]]) >> s));
  });
}

// ---- Unique ------------------------------------------------------------------------------------------------

void unique_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  const bool sorted = ctx.node.attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.node.has_attr("axis");
  const int64_t axis = has_axis ? axis_of(ctx, ctx.node.attr_int("axis", 0), X.rank()) : 0;
  // Slices along the axis (single elements when flattened), compared as rows of doubles.
  int64_t outer = 1, n = X.numel(), inner = 1;
  if (has_axis) {
    n = X.dim(int(axis));
    for (int64_t d = 0; d < axis; ++d) outer *= X.dim(int(d));
    for (int64_t d = axis + 1; d < X.rank(); ++d) inner *= X.dim(int(d));
  }
  std::vector<double> x = doubles_of(X);
  auto slice = [&](int64_t s) {
    std::vector<double> v;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) v.push_back(x[size_t((o * n + s) * inner + i)]);
    return v;
  };
  std::vector<std::vector<double>> rows;
  for (int64_t s = 0; s < n; ++s) rows.push_back(slice(s));
  std::vector<int64_t> first;  // first occurrence of each unique row, in output order
  std::vector<int64_t> inverse(static_cast<size_t>(n));
  std::map<std::vector<double>, int64_t> seen;  // row -> position in `first` (unsorted order)
  for (int64_t s = 0; s < n; ++s) {
    auto it = seen.find(rows[size_t(s)]);
    if (it == seen.end()) {
      it = seen.emplace(rows[size_t(s)], int64_t(first.size())).first;
      first.push_back(s);
    }
    inverse[size_t(s)] = it->second;
  }
  std::vector<int64_t> order(first.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return rows[size_t(first[size_t(a)])] < rows[size_t(first[size_t(b)])]; });
  std::vector<int64_t> rank(order.size());
  for (size_t k = 0; k < order.size(); ++k) rank[size_t(order[k])] = int64_t(k);
  const int64_t u = int64_t(order.size());
  Shape ys = has_axis ? X.shape() : Shape{u};
  if (has_axis) ys[size_t(axis)] = u;
  Tensor y(X.dtype(), ys), indices(DType::i64, {u}), inv(DType::i64, {n}), counts(DType::i64, {u});
  for (int64_t k = 0; k < u; ++k) {
    const int64_t s = first[size_t(order[size_t(k)])];
    indices.data<int64_t>()[k] = s;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) copy_elem(X, (o * n + s) * inner + i, y, (o * u + k) * inner + i);
  }
  for (int64_t s = 0; s < n; ++s) {
    const int64_t k = rank[size_t(inverse[size_t(s)])];
    inv.data<int64_t>()[s] = k;
    ++counts.data<int64_t>()[k];
  }
  const Tensor results[] = {y, indices, inv, counts};
  for (size_t k = 0; k < ctx.outputs.size() && k < 4; ++k)
    if (ctx.outputs[k]) *ctx.outputs[k] = results[k];
}

// ---- window functions (opset 17) -----------------------------------------------------------------------------

void window_kernel(KernelContext& ctx, int kind) {
  Tensor& y = out(ctx, 0);
  const int64_t n = y.numel();
  const bool periodic = ctx.node.attr_int("periodic", 1) != 0;
  const double d = periodic ? double(n) : double(n - 1);
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; ++i) {
    const double t = d > 0 ? 2 * pi * double(i) / d : 0.0;
    double v;
    if (kind == 0)
      v = 0.5 - 0.5 * std::cos(t);
    else if (kind == 1)
      v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(t);
    else
      v = 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t);
    y.set_from_double(i, v);
  }
}

// ---- losses ------------------------------------------------------------------------------------------------

// Negative log-likelihood over log-probabilities lp [N, C, D] (D = product of the extra dims).
void nll(KernelContext& ctx, const std::vector<double>& lp, int64_t N, int64_t C, int64_t D, Tensor& y) {
  std::vector<int64_t> target = ints_of(ctx, in(ctx, 1));
  std::vector<double> weight = has_in(ctx, 2) ? doubles_of(in(ctx, 2)) : std::vector<double>(size_t(C), 1.0);
  const bool has_ignore = ctx.node.has_attr("ignore_index");
  const int64_t ignore = ctx.node.attr_int("ignore_index", 0);
  const std::string red = ctx.node.attr_string("reduction", "mean");
  std::vector<double> loss(static_cast<size_t>(N * D), 0.0);
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = target[size_t(n * D + d)];
      if (has_ignore && t == ignore) continue;
      if (t < 0 || t >= C) kfail(ctx, "target ", t, " is out of range for ", C, " classes");
      const double w = weight[size_t(t)];
      const double l = -lp[size_t((n * C + t) * D + d)] * w;
      loss[size_t(n * D + d)] = l;
      sum += l;
      wsum += w;
    }
  if (red == "none") {
    for (size_t i = 0; i < loss.size(); ++i) y.set_from_double(int64_t(i), loss[i]);
  } else {
    y.set_from_double(0, red == "sum" ? sum : sum / wsum);
  }
}

void nll_loss_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const int64_t N = x.dim(0), C = x.dim(1), D = (N > 0 && C > 0) ? x.numel() / (N * C) : 0;
  nll(ctx, doubles_of(x), N, C, D, out(ctx, 0));
}

void softmax_ce_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const int64_t N = x.dim(0), C = x.dim(1), D = (N > 0 && C > 0) ? x.numel() / (N * C) : 0;
  std::vector<double> v = doubles_of(x), lp(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      double mx = -INFINITY, s = 0;
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, v[size_t((n * C + c) * D + d)]);
      for (int64_t c = 0; c < C; ++c) s += std::exp(v[size_t((n * C + c) * D + d)] - mx);
      for (int64_t c = 0; c < C; ++c)
        lp[size_t((n * C + c) * D + d)] = v[size_t((n * C + c) * D + d)] - mx - std::log(s);
    }
  nll(ctx, lp, N, C, D, out(ctx, 0));
  if (wants_out(ctx, 1) && out(ctx, 1).defined())
    for (size_t i = 0; i < lp.size(); ++i) out(ctx, 1).set_from_double(int64_t(i), lp[i]);
}

}  // namespace

void register_misc_reference() {
  reg("NegativeLogLikelihoodLoss", nll_loss_kernel);
  reg("SoftmaxCrossEntropyLoss", softmax_ce_kernel);
  reg("QuantizeLinear", quantize_kernel);
  reg("DequantizeLinear", dequantize_kernel);
  reg("DynamicQuantizeLinear", dynamic_quantize_kernel);
  reg("MatMulInteger", matmul_integer_kernel);
  reg("QLinearMatMul", qlinear_matmul_kernel);
  reg("ConvInteger", conv_integer_kernel);
  reg("QLinearConv", qlinear_conv_kernel);
  reg("NonMaxSuppression", nms_kernel);
  reg("GridSample", grid_sample_kernel);
  reg("LRN", lrn_kernel);
  reg_bytes("MaxUnpool", max_unpool_kernel);
  reg("Det", det_kernel);
  reg("BitShift", bitshift_kernel);
  reg_bytes("Unique", unique_kernel);
  reg("HannWindow", [](KernelContext& ctx) { window_kernel(ctx, 0); });
  reg("HammingWindow", [](KernelContext& ctx) { window_kernel(ctx, 1); });
  reg("BlackmanWindow", [](KernelContext& ctx) { window_kernel(ctx, 2); });
}

}  // namespace segmux::ref
