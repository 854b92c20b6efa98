// Row statistics: LayerNorm, GroupNorm, Softmax (one block per row or group, two passes in f32 with a
// block reduction; the mean first, then the centred variance, as the reference does in double) and the
// axis reductions.
#include <cfloat>

#include "kernels/cuda/cuda_common.cuh"

namespace segmux::cuda {

namespace {

using detail::as_stream;
using detail::launched;

enum class Combine { sum, max };

// Reduces one value per thread over the block (blockDim.x a power of two >= 32); every thread gets it.
template <Combine C>
__device__ float block_reduce(float v, float* shared) {
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = C == Combine::sum ? v + other : fmaxf(v, other);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // `shared` may still be read from a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : (C == Combine::sum ? 0.f : -FLT_MAX);
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = C == Combine::sum ? v + other : fmaxf(v, other);
  }
  return v;
}

__global__ void layer_norm_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t cols,
                                  float eps) {
  __shared__ float shared[32];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
  const float mean = block_reduce<Combine::sum>(s, shared) / float(cols);
  float v = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) v += (xr[j] - mean) * (xr[j] - mean);
  const float rstd = rsqrtf(block_reduce<Combine::sum>(v, shared) / float(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    yr[j] = (xr[j] - mean) * rstd * scale[j] + (bias ? bias[j] : 0.f);
}

// One block per (n, group); the group's values are contiguous: (C / groups) channels x spatial.
__global__ void group_norm_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t c,
                                  int64_t spatial, int64_t groups, float eps) {
  __shared__ float shared[32];
  const int64_t cg = c / groups, count = cg * spatial;
  const float* xg = x + blockIdx.x * count;
  float* yg = y + blockIdx.x * count;
  const int64_t first_channel = (blockIdx.x % groups) * cg;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) s += xg[j];
  const float mean = block_reduce<Combine::sum>(s, shared) / float(count);
  float v = 0.f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) v += (xg[j] - mean) * (xg[j] - mean);
  const float rstd = rsqrtf(block_reduce<Combine::sum>(v, shared) / float(count) + eps);
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t ch = first_channel + j / spatial;
    yg[j] = (xg[j] - mean) * rstd * scale[ch] + bias[ch];
  }
}

__global__ void softmax_kernel(const float* x, float* y, int64_t cols) {
  __shared__ float shared[32];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = block_reduce<Combine::max>(m, shared);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
  const float inv = 1.f / block_reduce<Combine::sum>(s, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}

__global__ void reduce_kernel(Reduce r, const float* x, float* y, int64_t outer, int64_t len, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float* p = x + (i / inner) * len * inner + i % inner;
    float acc = r == Reduce::max ? -INFINITY : 0.f;
    for (int64_t j = 0; j < len; ++j) acc = r == Reduce::max ? fmaxf(acc, p[j * inner]) : acc + p[j * inner];
    y[i] = r == Reduce::mean ? acc / float(len) : acc;
  }
}

__global__ void argmax_kernel(const float* x, int64_t* y, int64_t outer, int64_t len, int64_t inner, bool select_last) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float* p = x + (i / inner) * len * inner + i % inner;
    int64_t best = 0;
    for (int64_t j = 1; j < len; ++j) {
      const float v = p[j * inner], b = p[best * inner];
      if (select_last ? v >= b : v > b) best = j;  // the reference's comparisons, NaN included
    }
    y[i] = best;
  }
}

}  // namespace

Status launch_argmax(const float* x, int64_t* y, int64_t outer, int64_t len, int64_t inner, bool select_last,
                     Stream s) {
  const int64_t n = outer * inner;
  if (n == 0) return nullptr;
  argmax_kernel<<<detail::grid_for(n), detail::block_for(), 0, as_stream(s)>>>(x, y, outer, len, inner, select_last);
  return launched("argmax kernel");
}

Status launch_layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                         float eps, Stream s) {
  if (rows == 0 || cols == 0) return nullptr;
  layer_norm_kernel<<<dim3(unsigned(rows)), dim3(unsigned(row_threads(cols))), 0, as_stream(s)>>>(x, scale, bias, y,
                                                                                                  cols, eps);
  return launched("layer norm kernel");
}

Status launch_group_norm(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t c,
                         int64_t spatial, int64_t groups, float eps, Stream s) {
  if (n == 0 || c == 0 || spatial == 0) return nullptr;
  group_norm_kernel<<<dim3(unsigned(n * groups)), dim3(1024u), 0, as_stream(s)>>>(x, scale, bias, y, c, spatial, groups,
                                                                                  eps);
  return launched("group norm kernel");
}

Status launch_softmax(const float* x, float* y, int64_t rows, int64_t cols, Stream s) {
  if (rows == 0 || cols == 0) return nullptr;
  softmax_kernel<<<dim3(unsigned(rows)), dim3(unsigned(row_threads(cols))), 0, as_stream(s)>>>(x, y, cols);
  return launched("softmax kernel");
}

Status launch_reduce(Reduce r, const float* x, float* y, int64_t outer, int64_t len, int64_t inner, Stream s) {
  const int64_t n = outer * inner;
  if (n == 0) return nullptr;
  reduce_kernel<<<detail::grid_for(n), detail::block_for(), 0, as_stream(s)>>>(r, x, y, outer, len, inner);
  return launched("reduce kernel");
}

}  // namespace segmux::cuda
