// Reference kernels of MatMul, Gemm, Conv (and segmux Conv, channels-last), ConvTranspose and Einsum. Float products
// accumulate in double; integer ones in int64 (wrapping like the integer type would).
#include <algorithm>

#include "ir/schemas/shape_math.h"
#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

template <typename T>
using AccOf = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// C[M,N] = A[M,K] * B[K,N] with arbitrary element strides for A and B (row-major C).
template <typename T>
void gemm_block(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c, int64_t m,
                int64_t k, int64_t n, std::vector<AccOf<T>>& row) {
  row.resize(size_t(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), AccOf<T>(0));
    for (int64_t p = 0; p < k; ++p) {
      const AccOf<T> av = AccOf<T>(a[i * a_rs + p * a_cs]);
      const T* brow = b + p * b_rs;
      if (b_cs == 1) {
        for (int64_t j = 0; j < n; ++j) row[size_t(j)] += av * AccOf<T>(brow[j]);
      } else {
        for (int64_t j = 0; j < n; ++j) row[size_t(j)] += av * AccOf<T>(brow[j * b_cs]);
      }
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = T(row[size_t(j)]);
  }
}

}  // namespace

void matmul_forward(const KernelContext& ctx, const Tensor& A, const Tensor& B, Tensor& Y) {
  Shape as = A.shape(), bs = B.shape();
  if (as.empty() || bs.empty()) kfail(ctx, "inputs must have rank >= 1");
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) kfail(ctx, "inner dimensions differ");
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape batch = ir::shape_math::broadcast_shapes(ctx.node, a_batch, b_batch);
  dispatch_numeric(ctx, A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = A.data<T>();
    const T* pb = B.data<T>();
    T* py = Y.data<T>();
    std::vector<AccOf<T>> row;
    if (m * n == 0) return;
    for_each_broadcast<2>(batch, {a_batch, b_batch}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      gemm_block<T>(pa + o[0] * m * k, k, 1, pb + o[1] * k * n, n, 1, py + i * m * n, m, k, n, row);
    });
  });
}

namespace {

void matmul_kernel(KernelContext& ctx) { matmul_forward(ctx, in(ctx, 0), in(ctx, 1), out(ctx, 0)); }

void gemm_kernel(KernelContext& ctx) {
  const Tensor& A = in(ctx, 0);
  const Tensor& B = in(ctx, 1);
  Tensor& Y = out(ctx, 0);
  const bool ta = ctx.node.attr_int("transA", 0) != 0, tb = ctx.node.attr_int("transB", 0) != 0;
  const double alpha = ctx.node.attr_float("alpha", 1.0f), beta = ctx.node.attr_float("beta", 1.0f);
  const int64_t m = Y.dim(0), n = Y.dim(1), k = ta ? A.dim(0) : A.dim(1);
  std::vector<double> c;
  if (has_in(ctx, 2)) {
    c.resize(size_t(m * n));
    std::vector<double> src = doubles_of(in(ctx, 2));
    for_each_broadcast<1>({m, n}, {in(ctx, 2).shape()},
                          [&](int64_t i, const std::array<int64_t, 1>& o) { c[size_t(i)] = src[size_t(o[0])]; });
  }
  dispatch_numeric(ctx, A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> prod(size_t(m * n));
    std::vector<AccOf<T>> row;
    // Compute A*B into a temporary in the accumulation precision of T, then scale.
    const int64_t a_rs = ta ? 1 : k, a_cs = ta ? m : 1;
    const int64_t b_rs = tb ? 1 : n, b_cs = tb ? k : 1;
    std::vector<AccOf<T>> acc(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        const AccOf<T> av = AccOf<T>(A.data<T>()[i * a_rs + p * a_cs]);
        for (int64_t j = 0; j < n; ++j) acc[size_t(i * n + j)] += av * AccOf<T>(B.data<T>()[p * b_rs + j * b_cs]);
      }
    T* py = Y.data<T>();
    for (int64_t i = 0; i < m * n; ++i) {
      double v = alpha * double(acc[size_t(i)]) + (c.empty() ? 0.0 : beta * c[size_t(i)]);
      if constexpr (std::is_floating_point_v<T>)
        py[i] = T(v);
      else
        py[i] = (alpha == 1 && (c.empty() || beta == 1)) ? T(acc[size_t(i)] + (c.empty() ? 0 : int64_t(c[size_t(i)])))
                                                         : saturate_cast<T>(v);
    }
  });
}

}  // namespace

void conv_forward(const KernelContext& ctx, const Tensor& X, const Tensor& W, const Tensor* B, Tensor& Y) {
  if (X.rank() > 5) kfail(ctx, "only 1-D, 2-D and 3-D convolutions are supported");
  const int64_t group = ctx.node.attr_int("group", 1);
  std::vector<int64_t> kernel(W.shape().begin() + 2, W.shape().end());
  auto win = ir::shape_math::conv_window(ctx.node, X.shape(), kernel, false);
  Geo3 g = geo3(X.shape(), Y.shape(), win.kernel, win.strides, win.dilations, win.pad_begin);
  const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), Cg = C / group, Mg = M / group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t kvol = g.k[0] * g.k[1] * g.k[2];
  std::vector<double> bias = B ? doubles_of(*B) : std::vector<double>(size_t(M), 0.0);
  if (int64_t(bias.size()) != M) kfail(ctx, "B must have ", M, " values");
  dispatch_float(ctx, X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    const T* pw = W.data<T>();
    T* py = Y.data<T>();
    std::vector<double> acc(static_cast<size_t>(out_plane));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const int64_t gi = m / Mg;
        std::fill(acc.begin(), acc.end(), bias[size_t(m)]);
        for (int64_t c = 0; c < Cg; ++c) {
          const T* xp = px + (n * C + gi * Cg + c) * in_plane;
          const T* wp = pw + (m * Cg + c) * kvol;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const double wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
                int64_t d0, d1, h0, h1, w0, w1;
                const int64_t od = kd * g.d[0] - g.p[0], oh = kh * g.d[1] - g.p[1], ow = kw * g.d[2] - g.p[2];
                valid_range(od, g.s[0], g.in[0], g.out[0], &d0, &d1);
                valid_range(oh, g.s[1], g.in[1], g.out[1], &h0, &h1);
                valid_range(ow, g.s[2], g.in[2], g.out[2], &w0, &w1);
                for (int64_t z = d0; z < d1; ++z)
                  for (int64_t y = h0; y < h1; ++y) {
                    const int64_t xb = ((z * g.s[0] + od) * g.in[1] + (y * g.s[1] + oh)) * g.in[2] + ow;
                    double* ar = acc.data() + (z * g.out[1] + y) * g.out[2];
                    for (int64_t x = w0; x < w1; ++x) ar[x] += wv * double(xp[xb + x * g.s[2]]);
                  }
              }
        }
        T* yp = py + (n * M + m) * out_plane;
        for (int64_t i = 0; i < out_plane; ++i) yp[i] = T(acc[size_t(i)]);
      }
  });
}

namespace {

void conv_kernel(KernelContext& ctx) {
  conv_forward(ctx, in(ctx, 0), in(ctx, 1), has_in(ctx, 2) ? &in(ctx, 2) : nullptr, out(ctx, 0));
}

// [N, A, B, C] -> [N, C, A, B] (to_first) or [N, A, B, C] -> [N, B, C, A] (to_last), f32.
Tensor rotate_channels(const Tensor& x, bool to_first) {
  const int64_t N = x.dim(0), A = x.dim(1), B = x.dim(2), C = x.dim(3);
  Tensor y(x.dtype(), to_first ? Shape{N, C, A, B} : Shape{N, B, C, A});
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const float v = px[((n * A + a) * B + b) * C + c];
          if (to_first)
            py[((n * C + c) * A + a) * B + b] = v;
          else
            py[((n * B + b) * C + c) * A + a] = v;
        }
  return y;
}

// segmux Conv: ONNX Conv (2-D) on channels-last input and/or output ([N, H, W, C]).
void conv_channels_last_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  if (X.rank() != 4 || X.dtype() != DType::f32) kfail(ctx, "segmux Conv takes a 4-D f32 input");
  const bool last_in = ctx.node.attr_int("channels_last_in", 0) != 0;
  const bool last_out = ctx.node.attr_int("channels_last_out", 0) != 0;
  const Tensor x = last_in ? rotate_channels(X, true) : X;
  Tensor y = last_out ? Tensor(Y.dtype(), {Y.dim(0), Y.dim(3), Y.dim(1), Y.dim(2)}) : Y;
  conv_forward(ctx, x, in(ctx, 1), has_in(ctx, 2) ? &in(ctx, 2) : nullptr, y);
  if (last_out) {
    const Tensor r = rotate_channels(y, false);
    std::copy(r.data<float>(), r.data<float>() + r.numel(), Y.data<float>());
  }
}

void conv_transpose_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  const Tensor& W = in(ctx, 1);
  Tensor& Y = out(ctx, 0);
  if (X.rank() > 5) kfail(ctx, "only 1-D, 2-D and 3-D transposed convolutions are supported");
  const int64_t group = ctx.node.attr_int("group", 1);
  std::vector<int64_t> kernel(W.shape().begin() + 2, W.shape().end());
  auto win = ir::shape_math::conv_transpose_window(ctx.node, X.shape(), kernel);
  Geo3 g = geo3(X.shape(), Y.shape(), win.kernel, win.strides, win.dilations, win.pad_begin);
  const int64_t N = X.dim(0), C = X.dim(1), Cg = C / group, Mg = W.dim(1), M = Mg * group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t kvol = g.k[0] * g.k[1] * g.k[2];
  std::vector<double> bias = has_in(ctx, 2) ? doubles_of(in(ctx, 2)) : std::vector<double>(size_t(M), 0.0);
  dispatch_float(ctx, X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    const T* pw = W.data<T>();
    T* py = Y.data<T>();
    std::vector<double> acc(static_cast<size_t>(out_plane));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const int64_t gi = m / Mg, mm = m % Mg;
        std::fill(acc.begin(), acc.end(), bias[size_t(m)]);
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t ci = gi * Cg + c;
          const T* xp = px + (n * C + ci) * in_plane;
          const T* wp = pw + (ci * Mg + mm) * kvol;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const double wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
                // Output o = i*s + k*d - pad: valid input range for 0 <= o < out.
                const int64_t od = kd * g.d[0] - g.p[0], oh = kh * g.d[1] - g.p[1], ow = kw * g.d[2] - g.p[2];
                int64_t d0, d1, h0, h1, w0, w1;
                valid_range(od, g.s[0], g.out[0], g.in[0], &d0, &d1);
                valid_range(oh, g.s[1], g.out[1], g.in[1], &h0, &h1);
                valid_range(ow, g.s[2], g.out[2], g.in[2], &w0, &w1);
                for (int64_t z = d0; z < d1; ++z)
                  for (int64_t y = h0; y < h1; ++y) {
                    const T* xr = xp + (z * g.in[1] + y) * g.in[2];
                    const int64_t ab = ((z * g.s[0] + od) * g.out[1] + (y * g.s[1] + oh)) * g.out[2] + ow;
                    for (int64_t x = w0; x < w1; ++x) acc[size_t(ab + x * g.s[2])] += wv * double(xr[x]);
                  }
              }
        }
        T* yp = py + (n * M + m) * out_plane;
        for (int64_t i = 0; i < out_plane; ++i) yp[i] = T(acc[size_t(i)]);
      }
  });
}

void einsum_kernel(KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) shapes.push_back(in(ctx, i).shape());
  auto plan = ir::shape_math::einsum_plan(ctx.node, shapes);
  Tensor& Y = out(ctx, 0);
  const size_t L = plan.label_size.size(), nin = ctx.inputs.size();
  // Per label: stride into each input (summed over repeats = diagonal) and into the output.
  std::vector<std::vector<int64_t>> st(nin, std::vector<int64_t>(L, 0));
  for (size_t j = 0; j < nin; ++j) {
    std::vector<int64_t> own = contiguous_strides(shapes[j]);
    for (size_t d = 0; d < shapes[j].size(); ++d)
      if (shapes[j][d] != 1) st[j][size_t(plan.input_labels[j][d])] += own[d];
  }
  std::vector<int64_t> ost(L, 0), ys = contiguous_strides(Y.shape());
  for (size_t d = 0; d < plan.output_labels.size(); ++d) ost[size_t(plan.output_labels[d])] = ys[d];
  std::vector<int> labels;
  Shape loop;
  for (size_t l = 0; l < L; ++l)
    if (plan.label_size[l] >= 0) {
      labels.push_back(int(l));
      loop.push_back(plan.label_size[l]);
    }
  dispatch_numeric(ctx, Y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<AccOf<T>> acc(size_t(Y.numel()), AccOf<T>(0));
    std::vector<const T*> src(nin);
    for (size_t j = 0; j < nin; ++j) src[j] = in(ctx, j).data<T>();
    for_each_index(loop, [&](const std::vector<int64_t>& c, int64_t) {
      AccOf<T> prod = 1;
      int64_t o = 0;
      for (size_t j = 0; j < nin; ++j) {
        int64_t off = 0;
        for (size_t q = 0; q < labels.size(); ++q) off += c[q] * st[j][size_t(labels[q])];
        prod *= AccOf<T>(src[j][off]);
      }
      for (size_t q = 0; q < labels.size(); ++q) o += c[q] * ost[size_t(labels[q])];
      acc[size_t(o)] += prod;
    });
    T* py = Y.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) py[i] = T(acc[i]);
  });
}

}  // namespace

void register_linalg_reference() {
  reg("MatMul", matmul_kernel);
  reg("Gemm", gemm_kernel);
  reg("Conv", conv_kernel);
  reg("ConvTranspose", conv_transpose_kernel);
  register_reference_kernel_fn("segmux", "Conv", conv_channels_last_kernel);
  reg("Einsum", einsum_kernel);
}

}  // namespace segmux::ref
