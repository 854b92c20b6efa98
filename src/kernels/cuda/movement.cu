// Data movement: one strided copy (Transpose, Slice, Expand, the pieces of Concat/Split) and Gather.
#include "kernels/cuda/cuda_common.cuh"

namespace segmux::cuda {

namespace {

using detail::as_stream;
using detail::block_for;
using detail::grid_for;
using detail::launched;

template <typename T>
__global__ void strided_copy_kernel(StridedCopy c, const T* in, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = c.in_base, dst = c.out_base;
    for (int d = c.rank - 1; d >= 0; --d) {
      const int64_t idx = rest % c.dims[d];
      rest /= c.dims[d];
      src += idx * c.in_strides[d];
      dst += idx * c.out_strides[d];
    }
    out[dst] = in[src];
  }
}

template <typename T>
__global__ void gather_kernel(const T* in, const int64_t* indices, T* out, int64_t outer, int64_t axis_len,
                              int64_t count, int64_t inner, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t x = i % inner, j = (i / inner) % count, o = i / (inner * count);
    int64_t idx = indices[j];
    if (idx < 0) idx += axis_len;
    // Out of range: the host validated constant indices; a data-dependent bad index reads element 0
    // rather than outside the buffer.
    if (idx < 0 || idx >= axis_len) idx = 0;
    out[i] = in[(o * axis_len + idx) * inner + x];
  }
}

template <typename T>
__global__ void gather_elements_kernel(GatherElements g, const T* in, const int64_t* indices, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      int64_t idx = rest % g.out_dims[d];
      rest /= g.out_dims[d];
      if (d == g.axis) {
        idx = indices[i];
        if (idx < 0) idx += g.axis_len;
        if (idx < 0 || idx >= g.axis_len) idx = 0;  // never outside the buffer
      }
      src += idx * g.in_strides[d];
    }
    out[i] = in[src];
  }
}

template <typename T>
__global__ void axis_gather_kernel(AxisGather g, const T* in, const int64_t* tables, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      src += tables[g.table_offset[d] + rest % g.out_dims[d]] * g.in_strides[d];
      rest /= g.out_dims[d];
    }
    out[i] = in[src];
  }
}

__device__ double roi_sample(const float* plane, int64_t h, int64_t w, double yy, double xx, double* v) {
  // The four bilinear taps of one sample point (zero weights outside [-1, h] x [-1, w]).
  double w1 = 0, w2 = 0, w3 = 0, w4 = 0;
  int64_t ylo = 0, yhi = 0, xlo = 0, xhi = 0;
  if (!(yy < -1.0 || yy > double(h) || xx < -1.0 || xx > double(w))) {
    double y = fmax(yy, 0.0), xv = fmax(xx, 0.0);
    ylo = int64_t(y);
    if (ylo >= h - 1) {
      ylo = yhi = h - 1;
      y = double(ylo);
    } else {
      yhi = ylo + 1;
    }
    xlo = int64_t(xv);
    if (xlo >= w - 1) {
      xlo = xhi = w - 1;
      xv = double(xlo);
    } else {
      xhi = xlo + 1;
    }
    const double ly = y - double(ylo), lx = xv - double(xlo), hy = 1 - ly, hx = 1 - lx;
    w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
  }
  v[0] = w1 * plane[ylo * w + xlo];
  v[1] = w2 * plane[ylo * w + xhi];
  v[2] = w3 * plane[yhi * w + xlo];
  v[3] = w4 * plane[yhi * w + xhi];
  return v[0] + v[1] + v[2] + v[3];
}

__global__ void roi_align_kernel(RoiAlignShape a, const float* x, const float* rois, const int64_t* batch, float* y,
                                 int64_t total) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pw = t % a.pw, ph = (t / a.pw) % a.ph, c = (t / (a.pw * a.ph)) % a.c, r = t / (a.pw * a.ph * a.c);
    const double off = a.half_pixel ? 0.5 : 0.0;
    const float* roi = rois + r * 4;
    const double x0 = double(roi[0]) * a.spatial_scale - off, y0 = double(roi[1]) * a.spatial_scale - off;
    const double x1 = double(roi[2]) * a.spatial_scale - off, y1 = double(roi[3]) * a.spatial_scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!a.half_pixel) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
    const double bh = rh / double(a.ph), bw = rw / double(a.pw);
    const int64_t gh = a.ratio > 0 ? a.ratio : int64_t(ceil(rh / double(a.ph)));
    const int64_t gw = a.ratio > 0 ? a.ratio : int64_t(ceil(rw / double(a.pw)));
    const double count = double(gh * gw > 1 ? gh * gw : 1);
    const float* plane = x + (batch[r] * a.c + c) * a.h * a.w;
    double acc = 0, v[4];
    bool first = true;
    for (int64_t iy = 0; iy < gh; ++iy) {
      const double yy = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
      for (int64_t ix = 0; ix < gw; ++ix) {
        const double xx = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
        const double sum = roi_sample(plane, a.h, a.w, yy, xx, v);
        if (a.is_max) {
          const double m = fmax(fmax(fmax(v[0], v[1]), v[2]), v[3]);
          acc = first ? m : fmax(acc, m);
          first = false;
        } else {
          acc += sum;
        }
      }
    }
    y[t] = float(a.is_max ? acc : acc / count);
  }
}

__global__ void im2col_kernel(Im2Col c, const float* x, float* col, int64_t total) {
  const int64_t k = c.c_per_group * c.kh * c.kw, p_count = c.n * c.oh * c.ow;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t kk = t % k, p = (t / k) % p_count, g = t / (k * p_count);
    const int64_t j = kk % c.kw, i = (kk / c.kw) % c.kh, ch = g * c.c_per_group + kk / (c.kw * c.kh);
    const int64_t ox = p % c.ow, oy = (p / c.ow) % c.oh, n = p / (c.ow * c.oh);
    const int64_t y = oy * c.sh - c.ph + i * c.dh, xx = ox * c.sw - c.pw + j * c.dw;
    const bool inside = y >= 0 && y < c.h && xx >= 0 && xx < c.w;
    col[t] = inside ? x[n * c.xs_n + ch * c.xs_c + y * c.xs_h + xx * c.xs_w] : 0.f;
  }
}

template <typename Launch>
Status by_size(int elem_bytes, Launch&& launch) {
  switch (elem_bytes) {
    case 1:
      launch(uint8_t{});
      break;
    case 2:
      launch(uint16_t{});
      break;
    case 4:
      launch(uint32_t{});
      break;
    case 8:
      launch(uint64_t{});
      break;
    default:
      return detail::fail_status("data movement", "element size must be 1, 2, 4 or 8 bytes");
  }
  return nullptr;
}

}  // namespace

Status launch_strided_copy(const StridedCopy& c, const void* in, void* out, int elem_bytes, Stream s) {
  int64_t n = 1;
  for (int d = 0; d < c.rank; ++d) n *= c.dims[d];
  if (n == 0) return nullptr;
  if (Status st = by_size(elem_bytes, [&](auto t) {
        using T = decltype(t);
        strided_copy_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(c, static_cast<const T*>(in),
                                                                           static_cast<T*>(out), n);
      }))
    return st;
  return launched("strided copy kernel");
}

Status launch_gather(const void* in, const int64_t* indices, void* out, int64_t outer, int64_t axis_len, int64_t count,
                     int64_t inner, int elem_bytes, Stream s) {
  const int64_t n = outer * count * inner;
  if (n == 0) return nullptr;
  if (Status st = by_size(elem_bytes, [&](auto t) {
        using T = decltype(t);
        gather_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(
            static_cast<const T*>(in), indices, static_cast<T*>(out), outer, axis_len, count, inner, n);
      }))
    return st;
  return launched("gather kernel");
}

Status launch_gather_elements(const GatherElements& g, const void* in, const int64_t* indices, void* out,
                              int elem_bytes, Stream s) {
  int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.out_dims[d];
  if (n == 0) return nullptr;
  if (Status st = by_size(elem_bytes, [&](auto t) {
        using T = decltype(t);
        gather_elements_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(g, static_cast<const T*>(in), indices,
                                                                              static_cast<T*>(out), n);
      }))
    return st;
  return launched("gather elements kernel");
}

Status launch_axis_gather(const AxisGather& g, const void* in, const int64_t* tables, void* out, int elem_bytes,
                          Stream s) {
  int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.out_dims[d];
  if (n == 0) return nullptr;
  if (Status st = by_size(elem_bytes, [&](auto t) {
        using T = decltype(t);
        axis_gather_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(g, static_cast<const T*>(in), tables,
                                                                          static_cast<T*>(out), n);
      }))
    return st;
  return launched("axis gather kernel");
}

Status launch_roi_align(const RoiAlignShape& a, const float* x, const float* rois, const int64_t* batch, float* y,
                        Stream s) {
  const int64_t total = a.rois * a.c * a.ph * a.pw;
  if (total == 0) return nullptr;
  roi_align_kernel<<<grid_for(total), block_for(), 0, as_stream(s)>>>(a, x, rois, batch, y, total);
  return launched("roi align kernel");
}

Status launch_im2col(const Im2Col& c, const float* x, float* col, Stream s) {
  const int64_t total = c.groups * c.n * c.oh * c.ow * c.c_per_group * c.kh * c.kw;
  if (total == 0) return nullptr;
  im2col_kernel<<<grid_for(total), block_for(), 0, as_stream(s)>>>(c, x, col, total);
  return launched("im2col kernel");
}

}  // namespace segmux::cuda
