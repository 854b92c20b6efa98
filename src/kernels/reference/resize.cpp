// Reference kernels of Resize (ONNX opset 13..17), segmux.ResizeAntialias (torch's antialiased
// bilinear) and RoiAlign (opset 16).
//
// Resize is separable: every output coordinate on every axis maps to a few (input index, weight)
// taps, and the axes are resampled one after another (identity axes are skipped). This equals the
// ONNX n-linear / n-cubic / nearest definition; tf_crop_and_resize extrapolation is applied last.
#include <algorithm>

#include "ir/schemas/shape_math.h"
#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

struct AxisTaps {
  std::vector<std::vector<std::pair<int64_t, double>>> taps;  // per output index
  std::vector<char> outside;                                  // tf_crop_and_resize: use extrapolation
  bool identity = true;
};

double cubic_weight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

AxisTaps axis_taps(const KernelContext& ctx, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  const ir::Node& n = ctx.node;
  const std::string mode = n.attr_string("mode", "nearest");
  const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = n.attr_string("nearest_mode", "round_prefer_floor");
  const double a = n.attr_float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  AxisTaps t;
  t.taps.resize(size_t(out));
  t.outside.assign(size_t(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    double x;
    const double xr = double(o);
    // The resized length as the ONNX reference defines it: in * scale (not rounded to the output size).
    const double len = double(in) * scale;
    if (ctm == "half_pixel")
      x = (xr + 0.5) / scale - 0.5;
    else if (ctm == "pytorch_half_pixel")
      x = len > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
    else if (ctm == "align_corners")
      x = len == 1 ? 0.0 : xr * double(in - 1) / (len - 1);
    else if (ctm == "asymmetric")
      x = xr / scale;
    else if (ctm == "tf_half_pixel_for_nn")
      x = (xr + 0.5) / scale;
    else if (ctm == "tf_crop_and_resize")
      x = len > 1 ? roi_start * double(in - 1) + xr * (roi_end - roi_start) * double(in - 1) / (len - 1)
                  : 0.5 * (roi_start + roi_end) * double(in - 1);
    else
      kfail(ctx, "unknown coordinate_transformation_mode '", ctm, "'");
    auto& taps = t.taps[size_t(o)];
    if (ctm == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      t.outside[size_t(o)] = 1;
      t.identity = false;
      taps.push_back({0, 0.0});
      continue;
    }
    auto clamp_idx = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (mode == "nearest") {
      double r;
      if (nearest == "round_prefer_floor")
        r = std::ceil(x - 0.5);
      else if (nearest == "round_prefer_ceil")
        r = std::floor(x + 0.5);
      else if (nearest == "floor")
        r = std::floor(x);
      else if (nearest == "ceil")
        r = std::ceil(x);
      else
        kfail(ctx, "unknown nearest_mode '", nearest, "'");
      taps.push_back({clamp_idx(int64_t(r)), 1.0});
    } else if (mode == "linear") {
      const double xc = std::clamp(x, 0.0, double(in - 1));
      const int64_t i0 = int64_t(std::floor(xc));
      const double f = xc - double(i0);
      taps.push_back({i0, 1.0 - f});
      if (f > 0) taps.push_back({clamp_idx(i0 + 1), f});
    } else if (mode == "cubic") {
      const int64_t i0 = int64_t(std::floor(x));
      const double f = x - double(i0);
      double sum = 0;
      for (int64_t k = -1; k <= 2; ++k) {
        const int64_t i = i0 + k;
        double w = cubic_weight(f - double(k), a);
        if (exclude_outside && (i < 0 || i >= in)) w = 0;
        taps.push_back({clamp_idx(i), w});
        sum += w;
      }
      if (exclude_outside && sum != 0)
        for (auto& tp : taps) tp.second /= sum;
    } else {
      kfail(ctx, "unknown mode '", mode, "'");
    }
    if (!(taps.size() == 1 && taps[0].first == o && taps[0].second == 1.0 && in == out)) {
      // Cubic taps at an integer position are (o, 1) plus zero-weight neighbours: still not "identity"
      // for the bookkeeping below, which is fine (it is only a shortcut).
      t.identity = false;
    }
  }
  if (in != out) t.identity = false;
  return t;
}

// Resamples axis `axis` of a [outer, in, inner] buffer into [outer, out, inner].
std::vector<double> resample_axis(const std::vector<double>& src, int64_t outer, int64_t in, int64_t inner,
                                  const AxisTaps& t) {
  const int64_t out = int64_t(t.taps.size());
  std::vector<double> dst(static_cast<size_t>(outer * out * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < out; ++j) {
      double* d = dst.data() + (o * out + j) * inner;
      for (auto& [i, w] : t.taps[size_t(j)]) {
        if (w == 0) continue;
        const double* s = src.data() + (o * in + i) * inner;
        for (int64_t k = 0; k < inner; ++k) d[k] += w * s[k];
      }
    }
  return dst;
}

void resize_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  const int64_t r = X.rank();
  std::vector<double> scales_v;
  std::vector<int64_t> sizes_v;
  if (has_in(ctx, 2)) scales_v = doubles_of(in(ctx, 2));
  if (has_in(ctx, 3)) sizes_v = ints_of(ctx, in(ctx, 3));
  auto plan = ir::shape_math::resize_plan(ctx.node, X.shape(), scales_v.empty() ? nullptr : &scales_v,
                                          sizes_v.empty() ? nullptr : &sizes_v);
  std::vector<double> roi;
  if (has_in(ctx, 1) && in(ctx, 1).numel() > 0) roi = doubles_of(in(ctx, 1));
  const bool crop = ctx.node.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  if (crop && int64_t(roi.size()) != 2 * r) kfail(ctx, "tf_crop_and_resize needs roi with ", 2 * r, " values");
  // Before the per-axis tables: an empty output may still name a huge length on another axis.
  if (Y.numel() == 0) return;
  std::vector<AxisTaps> taps;
  for (int64_t a = 0; a < r; ++a)
    taps.push_back(axis_taps(ctx, X.dim(int(a)), plan.out[size_t(a)], plan.scales[size_t(a)],
                             crop ? roi[size_t(a)] : 0.0, crop ? roi[size_t(a + r)] : 1.0));
  if (X.numel() == 0) kfail(ctx, "cannot resize an empty tensor to a non-empty one");
  const bool nearest = ctx.node.attr_string("mode", "nearest") == "nearest";
  if (nearest) {
    // Pure index mapping: works for every dtype, byte-wise.
    std::vector<int64_t> xs = contiguous_strides(X.shape());
    for_each_index(Y.shape(), [&](const std::vector<int64_t>& c, int64_t o) {
      int64_t off = 0;
      for (size_t d = 0; d < c.size(); ++d) off += taps[d].taps[size_t(c[d])][0].first * xs[d];
      copy_elem(X, off, Y, o);
    });
  } else {
    std::vector<double> buf = doubles_of(X);
    Shape cur = X.shape();
    for (int64_t a = 0; a < r; ++a) {
      if (taps[size_t(a)].identity) continue;
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < a; ++d) outer *= cur[size_t(d)];
      for (int64_t d = a + 1; d < r; ++d) inner *= cur[size_t(d)];
      buf = resample_axis(buf, outer, cur[size_t(a)], inner, taps[size_t(a)]);
      cur[size_t(a)] = plan.out[size_t(a)];
    }
    dispatch_float(ctx, Y.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* py = Y.data<T>();
      for (size_t i = 0; i < buf.size(); ++i) py[i] = T(buf[i]);
    });
  }
  if (crop) {
    const double extrapolation = ctx.node.attr_float("extrapolation_value", 0.0f);
    for_each_index(Y.shape(), [&](const std::vector<int64_t>& c, int64_t o) {
      for (size_t d = 0; d < c.size(); ++d)
        if (taps[d].outside[size_t(c[d])]) {
          Y.set_from_double(o, extrapolation);
          return;
        }
    });
  }
}

// ---- segmux.ResizeAntialias: torch F.interpolate(mode="bilinear", antialias=True, align_corners=False)
// on the last two dims. Weights and sums follow ATen's CPU kernel in the tensor's own precision
// (float for f32): triangle filter widened by the downscale factor, renormalised per output pixel;
// the width pass runs first, then the height pass; an unchanged axis is skipped.

template <typename T>
struct AaAxis {
  std::vector<int64_t> xmin, xsize;
  std::vector<T> w;
  int64_t stride = 0;
};

template <typename T>
AaAxis<T> aa_axis(int64_t in, int64_t out) {
  AaAxis<T> ax;
  const T scale = static_cast<T>(in) / static_cast<T>(out);
  const T support = scale >= 1.0 ? static_cast<T>(1.0 * scale) : static_cast<T>(1.0);
  ax.stride = int64_t(std::ceil(support)) * 2 + 1;
  ax.xmin.resize(size_t(out));
  ax.xsize.resize(size_t(out));
  ax.w.assign(size_t(out * ax.stride), T(0));
  const T invscale = scale >= 1.0 ? static_cast<T>(1.0 / scale) : static_cast<T>(1.0);
  for (int64_t i = 0; i < out; ++i) {
    const T center = static_cast<T>(scale * (double(i) + 0.5));
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t(0));
    int64_t xsize = std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin;
    xsize = std::clamp<int64_t>(xsize, 0, ax.stride);
    T* w = ax.w.data() + i * ax.stride;
    T total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      T x = static_cast<T>((static_cast<T>(j + xmin) - center + 0.5) * invscale);
      if (x < 0) x = -x;
      w[j] = x < 1 ? T(1) - x : T(0);
      total += w[j];
    }
    if (total != 0)
      for (int64_t j = 0; j < xsize; ++j) w[j] /= total;
    ax.xmin[size_t(i)] = xmin;
    ax.xsize[size_t(i)] = xsize;
  }
  return ax;
}

// [outer, in, inner] -> [outer, out, inner] along the middle axis.
template <typename T>
std::vector<T> aa_pass(const std::vector<T>& src, int64_t outer, int64_t in, int64_t inner, int64_t out) {
  AaAxis<T> ax = aa_axis<T>(in, out);
  std::vector<T> dst(static_cast<size_t>(outer * out * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < out; ++i) {
      const T* w = ax.w.data() + i * ax.stride;
      const int64_t x0 = ax.xmin[size_t(i)], n = ax.xsize[size_t(i)];
      for (int64_t k = 0; k < inner; ++k) {
        const T* s = src.data() + (o * in + x0) * inner + k;
        T acc = n > 0 ? s[0] * w[0] : T(0);
        for (int64_t j = 1; j < n; ++j) acc += s[j * inner] * w[j];
        dst[size_t((o * out + i) * inner + k)] = acc;
      }
    }
  return dst;
}

void resize_antialias_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  Tensor& Y = out(ctx, 0);
  const int64_t H = X.dim(-2), W = X.dim(-1), OH = Y.dim(-2), OW = Y.dim(-1);
  const int64_t planes = (H > 0 && W > 0) ? X.numel() / (H * W) : 0;
  if (Y.numel() == 0) return;
  if (X.numel() == 0) kfail(ctx, "cannot resize an empty tensor");
  dispatch_float(ctx, X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> buf(X.data<T>(), X.data<T>() + X.numel());
    if (OW != W) buf = aa_pass<T>(buf, planes * H, W, 1, OW);
    if (OH != H) buf = aa_pass<T>(buf, planes, H, OW, OH);
    std::copy(buf.begin(), buf.end(), Y.data<T>());
  });
}

// ---- RoiAlign (opset 16) --------------------------------------------------------------------------

void roi_align_kernel(KernelContext& ctx) {
  const Tensor& X = in(ctx, 0);
  std::vector<double> rois = doubles_of(in(ctx, 1));
  std::vector<int64_t> batch = ints_of(ctx, in(ctx, 2));
  Tensor& Y = out(ctx, 0);
  const bool half_pixel = ctx.node.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const bool is_max = ctx.node.attr_string("mode", "avg") == "max";
  const int64_t ph_n = ctx.node.attr_int("output_height", 1), pw_n = ctx.node.attr_int("output_width", 1);
  const int64_t ratio = ctx.node.attr_int("sampling_ratio", 0);
  const double ss = ctx.node.attr_float("spatial_scale", 1.0f);
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = Y.dim(0);
  if (R > 0 && C > 0 && (H == 0 || W == 0)) kfail(ctx, "cannot sample an empty feature map");
  std::vector<double> x = doubles_of(X);
  for (int64_t r = 0; r < R; ++r) {
    const int64_t b = batch[size_t(r)];
    if (b < 0 || b >= N) kfail(ctx, "batch index ", b, " is out of range for batch size ", N);
    const double off = half_pixel ? 0.5 : 0.0;
    const double* roi = rois.data() + r * 4;
    const double x0 = roi[0] * ss - off, y0 = roi[1] * ss - off, x1 = roi[2] * ss - off, y1 = roi[3] * ss - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(ph_n), bw = rw / double(pw_n);
    const int64_t gh = ratio > 0 ? ratio : int64_t(std::ceil(rh / double(ph_n)));
    const int64_t gw = ratio > 0 ? ratio : int64_t(std::ceil(rw / double(pw_n)));
    const double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = x.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < ph_n; ++ph)
        for (int64_t pw = 0; pw < pw_n; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            double yy = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              double xx = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
              double w1 = 0, w2 = 0, w3 = 0, w4 = 0;
              int64_t ylo = 0, yhi = 0, xlo = 0, xhi = 0;
              if (!(yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W))) {
                double y = std::max(yy, 0.0), xv = std::max(xx, 0.0);
                ylo = int64_t(y);
                if (ylo >= H - 1) {
                  ylo = yhi = H - 1;
                  y = double(ylo);
                } else {
                  yhi = ylo + 1;
                }
                xlo = int64_t(xv);
                if (xlo >= W - 1) {
                  xlo = xhi = W - 1;
                  xv = double(xlo);
                } else {
                  xhi = xlo + 1;
                }
                const double ly = y - double(ylo), lx = xv - double(xlo), hy = 1 - ly, hx = 1 - lx;
                w1 = hy * hx;
                w2 = hy * lx;
                w3 = ly * hx;
                w4 = ly * lx;
              }
              const double v1 = w1 * plane[ylo * W + xlo], v2 = w2 * plane[ylo * W + xhi];
              const double v3 = w3 * plane[yhi * W + xlo], v4 = w4 * plane[yhi * W + xhi];
              if (is_max) {
                const double v = std::max(std::max(std::max(v1, v2), v3), v4);
                acc = first ? v : std::max(acc, v);
                first = false;
              } else {
                acc += v1 + v2 + v3 + v4;
              }
            }
          }
          Y.set_from_double(((r * C + c) * ph_n + ph) * pw_n + pw, is_max ? acc : acc / count);
        }
    }
  }
}

}  // namespace

void register_resize_reference() {
  reg("Resize", resize_kernel);
  register_reference_kernel_fn("segmux", "ResizeAntialias", upcast16(resize_antialias_kernel));
  reg("RoiAlign", roi_align_kernel);
}

}  // namespace segmux::ref
