// AVX-512 loop of the Rope kernel (rope.cpp). Built with the AVX-512 flags; reached only through
// avx512::kRope.
#include "kernels/cpu/avx512_math.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu::avx512 {
namespace {

void rope_rows(const float* px, int64_t x_row, const float* c2, const float* s2, float* py, int64_t begin, int64_t end,
               int64_t L, int64_t D) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = px + r * x_row;
    const float* cr = c2 + (r % L) * D;
    const float* sr = s2 + (r % L) * D;
    float* yr = py + r * D;
    for (int64_t i = 0; i < D; i += 16) {
      __mmask16 k = tail_mask(D - i);
      __m512 v = _mm512_maskz_loadu_ps(k, xr + i);
      __m512 swapped = _mm512_permute_ps(v, 0xB1);  // (x1, x0, x3, x2, ...)
      __m512 p = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, cr + i));
      __m512 q = _mm512_mul_ps(swapped, _mm512_maskz_loadu_ps(k, sr + i));
      // Keep the products rounded separately (GCC would otherwise contract mul+add into an FMA).
      asm("" : "+v"(p), "+v"(q));
      __m512 y = _mm512_add_ps(p, q);
      _mm512_mask_storeu_ps(yr + i, k, y);
    }
  }
}

}  // namespace

const RopeFns kRope = {rope_rows};

}  // namespace segmux::cpu::avx512
