// Reference kernels of reductions (Reduce*, ArgMax/ArgMin), softmax-like ops and normalizations.
// Float math accumulates in double; integer sums and products wrap in the integer type.
#include <algorithm>

#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

// Which axes a Reduce* node reduces (empty result = identity copy for noop_with_empty_axes).
std::vector<char> reduced_axes(const KernelContext& ctx, const Tensor& x, bool* noop) {
  std::vector<int64_t> axes = has_in(ctx, 1) ? ints_of(ctx, in(ctx, 1)) : ctx.node.attr_ints("axes", {});
  std::vector<char> red(size_t(x.rank()), 0);
  *noop = false;
  if (axes.empty()) {
    if (ctx.node.attr_int("noop_with_empty_axes", 0) != 0)
      *noop = true;
    else
      std::fill(red.begin(), red.end(), 1);
  }
  for (int64_t a : axes) red[size_t(axis_of(ctx, a, x.rank()))] = 1;
  return red;
}

enum class Red { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

void reduce_kernel(KernelContext& ctx, Red kind) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  bool noop;
  std::vector<char> red = reduced_axes(ctx, x, &noop);
  if (noop) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  // Output strides laid over the input dims (0 on reduced axes).
  Shape kept = x.shape();
  int64_t count = 1;
  for (size_t d = 0; d < red.size(); ++d)
    if (red[d]) {
      count *= kept[d];
      kept[d] = 1;
    }
  std::vector<int64_t> ost = broadcast_strides(kept, x.shape());
  const int64_t n_out = y.numel();
  dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr bool is_float = std::is_floating_point_v<T>;
    using Acc = std::conditional_t<is_float, double, int64_t>;
    const T* px = x.data<T>();
    std::vector<Acc> acc(static_cast<size_t>(n_out));
    Acc init = 0;
    if (kind == Red::prod) init = 1;
    if (kind == Red::max) init = is_float ? Acc(-INFINITY) : Acc(std::numeric_limits<T>::lowest());
    if (kind == Red::min) init = is_float ? Acc(INFINITY) : Acc(std::numeric_limits<T>::max());
    std::fill(acc.begin(), acc.end(), init);
    std::vector<double> shift;  // LogSumExp: per-output max, for stability
    if (kind == Red::log_sum_exp) {
      shift.assign(size_t(n_out), -INFINITY);
      for_each_index(x.shape(), [&](const std::vector<int64_t>& c, int64_t i) {
        int64_t o = 0;
        for (size_t d = 0; d < c.size(); ++d) o += c[d] * ost[d];
        shift[size_t(o)] = std::max(shift[size_t(o)], double(px[i]));
      });
      for (double& s : shift)
        if (!std::isfinite(s)) s = 0;
    }
    for_each_index(x.shape(), [&](const std::vector<int64_t>& c, int64_t i) {
      int64_t o = 0;
      for (size_t d = 0; d < c.size(); ++d) o += c[d] * ost[d];
      Acc& a = acc[size_t(o)];
      const Acc v = Acc(px[i]);
      switch (kind) {
        case Red::sum:
        case Red::mean:
        case Red::log_sum:
          a = is_float ? a + v : Acc(uint64_t(a) + uint64_t(v));
          break;
        case Red::prod:
          a = is_float ? a * v : Acc(uint64_t(a) * uint64_t(v));
          break;
        case Red::max:
          if constexpr (is_float)
            a = (std::isnan(a) || std::isnan(v)) ? NAN : std::max(a, v);
          else
            a = std::max(a, v);
          break;
        case Red::min:
          if constexpr (is_float)
            a = (std::isnan(a) || std::isnan(v)) ? NAN : std::min(a, v);
          else
            a = std::min(a, v);
          break;
        case Red::l1:
          a += v < 0 ? Acc(0) - v : v;
          break;
        case Red::l2:
        case Red::sum_square:
          a += v * v;
          break;
        case Red::log_sum_exp:
          a = Acc(double(a) + std::exp(double(v) - shift[size_t(o)]));
          break;
      }
    });
    T* py = y.data<T>();
    for (int64_t o = 0; o < n_out; ++o) {
      const Acc a = acc[size_t(o)];
      double r;
      switch (kind) {
        case Red::mean:
          if constexpr (is_float)
            r = a / double(count);
          else
            r = count ? double(a / count) : 0.0;
          break;
        case Red::l2:
          r = std::sqrt(double(a));
          break;
        case Red::log_sum:
          r = std::log(double(a));
          break;
        case Red::log_sum_exp:
          r = std::log(double(a)) + shift[size_t(o)];
          break;
        default:
          if constexpr (is_float)
            r = a;
          else {
            py[o] = T(a);  // exact integer result
            continue;
          }
      }
      py[o] = saturate_cast<T>(r);
    }
  });
}

void arg_kernel(KernelContext& ctx, bool is_max) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), x.rank());
  const bool last = ctx.node.attr_int("select_last_index", 0) != 0;
  const int64_t n = x.dim(int(axis));
  if (n == 0) kfail(ctx, "cannot take ArgMax/ArgMin over an empty axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  int64_t* py = y.data<int64_t>();
  dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = px + o * n * inner + i;
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j) {
          const T v = base[j * inner], b = base[best * inner];
          const bool better = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
          if (better) best = j;
        }
        py[o * inner + i] = best;
      }
  });
}

// Softmax family over one axis: the tensor is viewed as [outer, n, inner].
enum class Soft { softmax, log_softmax, hardmax, lp };

void softmax_kernel(KernelContext& ctx, Soft kind) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  if (x.numel() == 0) return;
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", -1), x.rank());
  const int64_t p = ctx.node.attr_int("p", 2);
  if (kind == Soft::lp && p != 1 && p != 2) kfail(ctx, "p must be 1 or 2");
  const int64_t n = x.dim(int(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  dispatch_float(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* a = px + o * n * inner + i;
        T* b = py + o * n * inner + i;
        if (kind == Soft::lp) {
          double norm = 0;
          for (int64_t j = 0; j < n; ++j)
            norm += p == 1 ? std::fabs(double(a[j * inner])) : double(a[j * inner]) * a[j * inner];
          if (p == 2) norm = std::sqrt(norm);
          for (int64_t j = 0; j < n; ++j) b[j * inner] = norm > 0 ? T(double(a[j * inner]) / norm) : T(0);
          continue;
        }
        int64_t arg = 0;
        double mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j)
          if (double(a[j * inner]) > mx || j == 0) {
            if (j == 0 || double(a[j * inner]) > mx) arg = j;
            mx = std::max(mx, double(a[j * inner]));
          }
        if (kind == Soft::hardmax) {
          for (int64_t j = 0; j < n; ++j) b[j * inner] = T(j == arg ? 1 : 0);
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(double(a[j * inner]) - mx);
        const double log_sum = std::log(sum);
        for (int64_t j = 0; j < n; ++j) {
          const double z = double(a[j * inner]) - mx;
          b[j * inner] = T(kind == Soft::softmax ? std::exp(z) / sum : z - log_sum);
        }
      }
  });
}

// Expands a parameter tensor broadcast over `shape` into a flat vector of doubles.
std::vector<double> expand_param(const Tensor& t, const Shape& shape) {
  std::vector<double> v(size_t(shape_numel(shape)));
  std::vector<double> src = doubles_of(t);
  for_each_broadcast<1>(shape, {t.shape()},
                        [&](int64_t i, const std::array<int64_t, 1>& o) { v[size_t(i)] = src[size_t(o[0])]; });
  return v;
}

void layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", -1), x.rank());
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t m = shape_numel(norm_shape);
  const int64_t rows = m ? x.numel() / m : 0;
  std::vector<double> scale = expand_param(in(ctx, 1), norm_shape);
  std::vector<double> bias =
      has_in(ctx, 2) ? expand_param(in(ctx, 2), norm_shape) : std::vector<double>(size_t(m), 0.0);
  float* mean_out = wants_out(ctx, 1) && out(ctx, 1).defined() ? out(ctx, 1).data<float>() : nullptr;
  float* inv_out = wants_out(ctx, 2) && out(ctx, 2).defined() ? out(ctx, 2).data<float>() : nullptr;
  dispatch_float(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* a = px + r * m;
      T* b = py + r * m;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < m; ++j) mean += a[j];
      mean /= double(m);
      for (int64_t j = 0; j < m; ++j) var += (a[j] - mean) * (a[j] - mean);
      var /= double(m);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < m; ++j) b[j] = T((a[j] - mean) * inv * scale[size_t(j)] + bias[size_t(j)]);
      if (mean_out) mean_out[r] = float(mean);
      if (inv_out) inv_out[r] = float(inv);
    }
  });
}

void instance_norm_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  std::vector<double> scale = doubles_of(in(ctx, 1)), bias = doubles_of(in(ctx, 2));
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t m = (N > 0 && C > 0) ? x.numel() / (N * C) : 0;
  if (int64_t(scale.size()) != C || int64_t(bias.size()) != C) kfail(ctx, "scale and B must have C values");
  dispatch_float(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const T* a = x.data<T>() + nc * m;
      T* b = y.data<T>() + nc * m;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < m; ++j) mean += a[j];
      mean /= double(m);
      for (int64_t j = 0; j < m; ++j) var += (a[j] - mean) * (a[j] - mean);
      var /= double(m);
      const double inv = 1.0 / std::sqrt(var + eps);
      const int64_t c = nc % C;
      for (int64_t j = 0; j < m; ++j) b[j] = T((a[j] - mean) * inv * scale[size_t(c)] + bias[size_t(c)]);
    }
  });
}

void batch_norm_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  std::vector<double> scale = doubles_of(in(ctx, 1)), bias = doubles_of(in(ctx, 2)), mean = doubles_of(in(ctx, 3)),
                      var = doubles_of(in(ctx, 4));
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t m = (N > 0 && C > 0) ? x.numel() / (N * C) : 0;
  for (auto* v : {&scale, &bias, &mean, &var})
    if (int64_t(v->size()) != C) kfail(ctx, "scale, B, mean and var must have C values");
  dispatch_float(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const int64_t c = nc % C;
      const double k = scale[size_t(c)] / std::sqrt(var[size_t(c)] + eps);
      const T* a = x.data<T>() + nc * m;
      T* b = y.data<T>() + nc * m;
      for (int64_t j = 0; j < m; ++j) b[j] = T((a[j] - mean[size_t(c)]) * k + bias[size_t(c)]);
    }
  });
}

void mvn_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  std::vector<int64_t> axes = ctx.node.attr_ints("axes", {0, 2, 3});
  Shape kept = x.shape();
  int64_t count = 1;
  for (int64_t a : axes) {
    const size_t d = size_t(axis_of(ctx, a, x.rank()));
    if (kept[d] != 1 || x.shape()[d] == 1) count *= x.shape()[d];
    kept[d] = 1;
  }
  std::vector<int64_t> ost = broadcast_strides(kept, x.shape());
  const int64_t n_out = shape_numel(kept);
  std::vector<double> sum(size_t(n_out), 0.0), sq(size_t(n_out), 0.0);
  std::vector<double> v = doubles_of(x);
  auto out_of = [&](const std::vector<int64_t>& c) {
    int64_t o = 0;
    for (size_t d = 0; d < c.size(); ++d) o += c[d] * ost[d];
    return size_t(o);
  };
  for_each_index(x.shape(), [&](const std::vector<int64_t>& c, int64_t i) {
    sum[out_of(c)] += v[size_t(i)];
    sq[out_of(c)] += v[size_t(i)] * v[size_t(i)];
  });
  for_each_index(x.shape(), [&](const std::vector<int64_t>& c, int64_t i) {
    const size_t o = out_of(c);
    const double mean = sum[o] / double(count), var = sq[o] / double(count) - mean * mean;
    y.set_from_double(i, (v[size_t(i)] - mean) / (std::sqrt(std::max(var, 0.0)) + 1e-9));
  });
}

}  // namespace

void register_reduce_reference() {
  const std::pair<const char*, Red> reds[] = {{"ReduceSum", Red::sum},
                                              {"ReduceMean", Red::mean},
                                              {"ReduceMax", Red::max},
                                              {"ReduceMin", Red::min},
                                              {"ReduceProd", Red::prod},
                                              {"ReduceL1", Red::l1},
                                              {"ReduceL2", Red::l2},
                                              {"ReduceLogSum", Red::log_sum},
                                              {"ReduceLogSumExp", Red::log_sum_exp},
                                              {"ReduceSumSquare", Red::sum_square}};
  for (auto& [name, kind] : reds) {
    Red k = kind;
    reg(name, [k](KernelContext& ctx) { reduce_kernel(ctx, k); });
  }
  reg("ArgMax", [](KernelContext& ctx) { arg_kernel(ctx, true); });
  reg("ArgMin", [](KernelContext& ctx) { arg_kernel(ctx, false); });
  reg("Softmax", [](KernelContext& ctx) { softmax_kernel(ctx, Soft::softmax); });
  reg("LogSoftmax", [](KernelContext& ctx) { softmax_kernel(ctx, Soft::log_softmax); });
  reg("Hardmax", [](KernelContext& ctx) { softmax_kernel(ctx, Soft::hardmax); });
  reg("LpNormalization", [](KernelContext& ctx) { softmax_kernel(ctx, Soft::lp); });
  reg("LayerNormalization", layer_norm_kernel);
  reg("InstanceNormalization", instance_norm_kernel);
  reg("BatchNormalization", batch_norm_kernel);
  reg("MeanVarianceNormalization", mvn_kernel);
}

}  // namespace segmux::ref
