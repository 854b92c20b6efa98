// Reference kernels of pooling: MaxPool (with Indices), AveragePool, LpPool and the global pools.
#include <algorithm>

#include "ir/schemas/shape_math.h"
#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

enum class Pool { max, avg, lp };

void pool_kernel(KernelContext& ctx, Pool kind) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  if (X.rank() > 5) kfail(ctx, "only 1-D, 2-D and 3-D pooling is supported");
  auto win = ir::shape_math::conv_window(ctx.node, X.shape(), ctx.node.attr_ints("kernel_shape"), true);
  Geo3 g = geo3(X.shape(), Y.shape(), win.kernel, win.strides, win.dilations, win.pad_begin);
  int64_t pe[3] = {0, 0, 0};
  for (size_t j = 0; j < win.kernel.size(); ++j) pe[3 - win.kernel.size() + j] = win.pad_end[j];
  const bool include_pad = ctx.node.attr_int("count_include_pad", 0) != 0;
  const bool col_major = ctx.node.attr_int("storage_order", 0) != 0;
  const double p = double(ctx.node.attr_int("p", 2));
  const int64_t planes = X.dim(0) * X.dim(1);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  int64_t* indices = wants_out(ctx, 1) && out(ctx, 1).defined() ? out(ctx, 1).data<int64_t>() : nullptr;
  dispatch_numeric(ctx, X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    T* py = Y.data<T>();
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            const int64_t o[3] = {od, oh, ow};
            int64_t start[3], limit[3];  // limit: end of the padded input (for count_include_pad)
            int64_t padded_count = 1;
            for (int a = 0; a < 3; ++a) {
              start[a] = o[a] * g.s[a] - g.p[a];
              limit[a] = g.in[a] + pe[a];
              int64_t taps = 0;
              for (int64_t k = 0; k < g.k[a]; ++k) taps += start[a] + k * g.d[a] < limit[a];
              padded_count *= taps;
            }
            double acc = kind == Pool::max ? -INFINITY : 0.0;
            bool any = false;
            int64_t best = -1, count = 0;
            for (int64_t kd = 0; kd < g.k[0]; ++kd) {
              const int64_t z = start[0] + kd * g.d[0];
              if (z < 0 || z >= g.in[0]) continue;
              for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                const int64_t y = start[1] + kh * g.d[1];
                if (y < 0 || y >= g.in[1]) continue;
                for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                  const int64_t x = start[2] + kw * g.d[2];
                  if (x < 0 || x >= g.in[2]) continue;
                  const int64_t off = (z * g.in[1] + y) * g.in[2] + x;
                  const double v = double(px[pl * in_plane + off]);
                  ++count;
                  if (kind == Pool::max) {
                    if (!any || v > acc) {
                      acc = v;
                      best = col_major ? (x * g.in[1] + y) * g.in[0] + z : off;
                    }
                    any = true;
                  } else if (kind == Pool::avg) {
                    acc += v;
                  } else {
                    acc += std::pow(std::fabs(v), p);
                  }
                }
              }
            }
            const int64_t oi = pl * out_plane + (od * g.out[1] + oh) * g.out[2] + ow;
            double r = acc;
            if (kind == Pool::avg) r = acc / double(include_pad ? padded_count : count);
            if (kind == Pool::lp) r = std::pow(acc, 1.0 / p);
            if constexpr (std::is_floating_point_v<T>)
              py[oi] = T(r);
            else
              py[oi] = saturate_cast<T>(r);
            if (indices) indices[oi] = pl * in_plane + best;
          }
  });
}

void global_pool_kernel(KernelContext& ctx, Pool kind) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  const int64_t planes = X.dim(0) * X.dim(1);
  const int64_t m = planes ? X.numel() / planes : 0;
  const double p = double(ctx.node.attr_int("p", 2));
  dispatch_float(ctx, X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    T* py = Y.data<T>();
    for (int64_t pl = 0; pl < planes; ++pl) {
      double acc = kind == Pool::max ? -INFINITY : 0.0;
      for (int64_t j = 0; j < m; ++j) {
        const double v = px[pl * m + j];
        if (kind == Pool::max)
          acc = std::max(acc, v);
        else if (kind == Pool::avg)
          acc += v;
        else
          acc += std::pow(std::fabs(v), p);
      }
      if (kind == Pool::avg) acc /= double(m);
      if (kind == Pool::lp) acc = std::pow(acc, 1.0 / p);
      py[pl] = T(acc);
    }
  });
}

}  // namespace

void register_pool_reference() {
  reg("MaxPool", [](KernelContext& ctx) { pool_kernel(ctx, Pool::max); });
  reg("AveragePool", [](KernelContext& ctx) { pool_kernel(ctx, Pool::avg); });
  reg("LpPool", [](KernelContext& ctx) { pool_kernel(ctx, Pool::lp); });
  reg("GlobalMaxPool", [](KernelContext& ctx) { global_pool_kernel(ctx, Pool::max); });
  reg("GlobalAveragePool", [](KernelContext& ctx) { global_pool_kernel(ctx, Pool::avg); });
  reg("GlobalLpPool", [](KernelContext& ctx) { global_pool_kernel(ctx, Pool::lp); });
}

}  // namespace segmux::ref
