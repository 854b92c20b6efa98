// Attention, flash-style: one warp per query row streams the keys once with an online softmax (running
// max, running sum, rescaled accumulator), so memory stays O(tokens): no score matrix. Additive f32 and
// bool masks; a row whose keys are all masked (-inf or false) gives zeros, as the reference does.
// First version: scalar FMA, a warp reduction per key; the tensor-core (wgmma) version comes later.
#include <cfloat>

#include "kernels/cuda/cuda_common.cuh"

namespace segmux::cuda {

namespace {

using detail::as_stream;
using detail::launched;

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Mask offset of (leading index b, query i) from the per-leading-dim strides.
__device__ int64_t mask_row_base(const AttentionShape& a, int64_t b, int64_t i) {
  int64_t off = i * a.mask_i;
  for (int d = a.lead_rank - 1; d >= 0; --d) {
    off += (b % a.lead_dims[d]) * a.mask_lead[d];
    b /= a.lead_dims[d];
  }
  return off;
}

// VPL head values per lane: D, Dv <= 32 * VPL; lane l owns dims l, l + 32, ...
template <int VPL>
__global__ void attention_kernel(AttentionShape a, const float* q, const float* k, const float* v, const void* mask,
                                 float* out) {
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kAttentionRowsPerBlock + threadIdx.x / 32;
  if (row >= a.batch * a.lq) return;
  const int64_t b = row / a.lq, i = row % a.lq;
  float qr[VPL], acc[VPL];
  for (int t = 0; t < VPL; ++t) {
    const int64_t d = lane + 32 * t;
    qr[t] = d < a.d ? q[row * a.d + d] * a.scale : 0.f;
    acc[t] = 0.f;
  }
  const float* kb = k + b * a.lk * a.d;
  const float* vb = v + b * a.lk * a.dv;
  const int64_t mbase = a.mask_kind ? mask_row_base(a, b, i) : 0;
  float m = -INFINITY, l = 0.f;
  for (int64_t j = 0; j < a.lk; ++j) {
    if (a.mask_kind == 2 && !static_cast<const uint8_t*>(mask)[mbase + j * a.mask_j]) continue;
    float part = 0.f;
    for (int t = 0; t < VPL; ++t) {
      const int64_t d = lane + 32 * t;
      if (d < a.d) part += qr[t] * kb[j * a.d + d];
    }
    float s = warp_sum(part);
    if (a.mask_kind == 1) s += static_cast<const float*>(mask)[mbase + j * a.mask_j];
    if (s == -INFINITY) continue;  // a fully masked key adds nothing (and must not make NaN)
    const float m_new = fmaxf(m, s);
    const float correction = expf(m - m_new);  // 0 on the first key (m = -inf)
    const float p = expf(s - m_new);
    l = l * correction + p;
    for (int t = 0; t < VPL; ++t) {
      const int64_t d = lane + 32 * t;
      acc[t] = acc[t] * correction + (d < a.dv ? p * vb[j * a.dv + d] : 0.f);
    }
    m = m_new;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;  // every key masked: zeros
  for (int t = 0; t < VPL; ++t) {
    const int64_t d = lane + 32 * t;
    if (d < a.dv) out[row * a.dv + d] = acc[t] * inv;
  }
}

}  // namespace

Status launch_attention(const AttentionShape& a, const float* q, const float* k, const float* v, const void* mask,
                        float* out, Stream s) {
  if (a.batch * a.lq == 0 || a.dv == 0) return nullptr;
  const int vpl = attention_values_per_lane(a.d > a.dv ? a.d : a.dv);
  const dim3 grid(unsigned(attention_blocks(a.batch, a.lq))), block(32u * kAttentionRowsPerBlock);
  cudaStream_t st = as_stream(s);
  if (vpl <= 1)
    attention_kernel<1><<<grid, block, 0, st>>>(a, q, k, v, mask, out);
  else if (vpl <= 2)
    attention_kernel<2><<<grid, block, 0, st>>>(a, q, k, v, mask, out);
  else if (vpl <= 4)
    attention_kernel<4><<<grid, block, 0, st>>>(a, q, k, v, mask, out);
  else if (vpl <= 8)
    attention_kernel<8><<<grid, block, 0, st>>>(a, q, k, v, mask, out);
  else
    return detail::fail_status("attention kernel", "head size above 256");
  return launched("attention kernel");
}

}  // namespace segmux::cuda
