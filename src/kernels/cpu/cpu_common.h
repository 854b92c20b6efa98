// Shared pieces of the optimized CPU kernels: threading (OpenMP, the runtime oneDNN uses on Debian, so
// one pool serves both), vectorised exp/erf, and small helpers. Internal to src/kernels/cpu.
#pragma once
// GCC 12 reports its own _mm512_undefined_ps() inside avx512fintrin.h as "maybe uninitialized" when
// masked/reduce intrinsics are inlined (a known false positive); silence it for the kernel files.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace segmux::cpu {

// Threads for this run: what the session asks for, at least 1.
inline int threads_of(int requested) { return std::max(1, requested); }

// Runs fn(begin, end) over [0, n) split into contiguous chunks, one per thread. fn must not throw.
template <typename Fn>
void parallel_chunks(int64_t n, int num_threads, Fn&& fn) {
  int nt = int(std::min<int64_t>(threads_of(num_threads), std::max<int64_t>(n, 1)));
  if (nt <= 1 || n <= 1) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) fn(b, e);
  }
}

// Runs fn(i, thread_index) for i in [0, n) with dynamic scheduling (uneven work items).
template <typename Fn>
void parallel_items(int64_t n, int num_threads, Fn&& fn) {
  int nt = int(std::min<int64_t>(threads_of(num_threads), std::max<int64_t>(n, 1)));
  if (nt <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) fn(i, omp_get_thread_num());
}

// Mask selecting the first n (0..16) lanes.
inline __mmask16 tail_mask(int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

inline float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }
inline float hmax(__m512 v) { return _mm512_reduce_max_ps(v); }

// exp(hi + lo) for |lo| << 1: Cody-Waite reduction by ln2 (two-part constant), degree-7 polynomial on
// |r| <= ln2/2, scaling by 2^n with scalef (handles overflow to inf and gradual underflow).
// Max error about 1-2 ulp over the float range.
inline __m512 exp_ps(__m512 x, __m512 lo = _mm512_setzero_ps()) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693145751953125f);
  const __m512 ln2_lo = _mm512_set1_ps(1.42860682030941723212e-6f);
  // Operand order keeps NaN (min/max return their second operand when one is NaN); below -110 the
  // result is exactly 0 (scalef underflows), so masked (-inf) scores contribute nothing.
  x = _mm512_max_ps(_mm512_set1_ps(-110.0f), _mm512_min_ps(_mm512_set1_ps(88.8f), x));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);  // exact: n*ln2_hi has few significant bits
  r = _mm512_fnmadd_ps(n, ln2_lo, r);
  r = _mm512_add_ps(r, lo);
  __m512 p = _mm512_set1_ps(1.f / 5040.f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

// erfc(z) for z >= 0 given also zz_hi + zz_lo == z*z (exactly, from an fma split): the Chebyshev
// fit erfc(z) = t * exp(-z^2 + P(t)), t = 1/(1 + z/2) (fractional error < 1.2e-7 for all z >= 0),
// with -z^2 + P(t) carried in two parts so the large exponent does not lose precision.
inline __m512 erfc_pos_ps(__m512 z, __m512 zz_hi, __m512 zz_lo) {
  const __m512 one = _mm512_set1_ps(1.f);
  __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), z, one));
  __m512 p = _mm512_set1_ps(0.17087277f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
  // s + e == p - zz_hi exactly (TwoSum), then the small parts join the reduced argument.
  __m512 s = _mm512_sub_ps(p, zz_hi);
  __m512 bb = _mm512_sub_ps(s, p);
  __m512 e = _mm512_add_ps(_mm512_sub_ps(p, _mm512_sub_ps(s, bb)), _mm512_sub_ps(_mm512_setzero_ps(),
                                                                                   _mm512_add_ps(zz_hi, bb)));
  e = _mm512_sub_ps(e, zz_lo);
  return _mm512_mul_ps(t, exp_ps(s, e));
}

// erf(z) for |z| < 0.5 by its Taylor series (8 terms; truncation < 1e-10 relative).
inline __m512 erf_small_ps(__m512 z) {
  __m512 z2 = _mm512_mul_ps(z, z);
  // 2/sqrt(pi) * sum (-1)^n z^(2n+1) / (n! (2n+1))
  __m512 p = _mm512_set1_ps(float(-1.0 / (5040.0 * 15.0)));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(float(1.0 / (720.0 * 13.0))));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(float(-1.0 / (120.0 * 11.0))));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(float(1.0 / (24.0 * 9.0))));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(float(-1.0 / (6.0 * 7.0))));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(float(1.0 / (2.0 * 5.0))));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(float(-1.0 / 3.0)));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(1.f));
  return _mm512_mul_ps(_mm512_mul_ps(p, z), _mm512_set1_ps(1.12837916709551257f));
}

// erf(x), any x (NaN propagates).
inline __m512 erf_ps(__m512 x) {
  __m512 a = _mm512_abs_ps(x);
  __m512 zz = _mm512_mul_ps(a, a);
  __m512 zz_lo = _mm512_fmsub_ps(a, a, zz);
  __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.f), erfc_pos_ps(a, zz, zz_lo));
  big = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(big),
                                            _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u)))));
  __mmask16 small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.5f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(small, big, erf_small_ps(x));
}

// GELU with exact erf: 0.5 x (1 + erf(x / sqrt 2)). For x < 0 the factor is erfc(|x|/sqrt 2), computed
// directly (no cancellation), with z^2 = x^2/2 split exactly.
inline __m512 gelu_ps(__m512 x) {
  const __m512 half = _mm512_set1_ps(0.5f);
  __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  __m512 a = _mm512_abs_ps(z);
  __m512 xx = _mm512_mul_ps(x, x);
  __m512 xx_lo = _mm512_fmsub_ps(x, x, xx);
  __m512 erfc_a = erfc_pos_ps(a, _mm512_mul_ps(xx, half), _mm512_mul_ps(xx_lo, half));
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  // 1 + erf(z): 2 - erfc(|z|) for z >= 0, erfc(|z|) for z < 0.
  __m512 one_plus = _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(2.f), erfc_a), erfc_a);
  __mmask16 small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.5f), _CMP_LT_OQ);
  one_plus = _mm512_mask_blend_ps(small, one_plus, _mm512_add_ps(_mm512_set1_ps(1.f), erf_small_ps(z)));
  return _mm512_mul_ps(_mm512_mul_ps(half, x), one_plus);
}

// A buffer that is allocated once and reused (first touch of fresh memory is slow on our VMs).
struct Scratch {
  std::unique_ptr<float[]> data;
  size_t size = 0;
  float* get(size_t n) {
    if (n > size) {
      data.reset(new float[n]);
      size = n;
    }
    return data.get();
  }
};

}  // namespace segmux::cpu
