// AVX-512 helpers of the *_avx512.cpp kernels: tail masks, reductions, vectorised exp/erf/GELU.
// Include only from *_avx512.cpp (built with the AVX-512 flags), whose code lives in namespace
// segmux::cpu::avx512 so none of these inline functions can be shared with baseline code at link time.
#pragma once
#ifndef __AVX512F__
#error "avx512_math.h is for *_avx512.cpp files only (built with -mavx512f ...)"
#endif
// GCC 12 reports its own _mm512_undefined_ps() inside avx512fintrin.h as "maybe uninitialized" when
// masked/reduce intrinsics are inlined (a known false positive, bug 105593); silence it for these files.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace segmux::cpu::avx512 {

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

// The erf family is evaluated in double precision on two 8-lane halves and rounded to float once,
// so the result carries the approximation error only (no float cancellation in the polynomials):
// erfc by the Chebyshev fit erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2) (fractional error
// < 1.2e-7 for all z >= 0, about 1 ulp of f32), erf for |z| < 0.5 by its Taylor series.

inline __m512d exp_pd(__m512d x) {  // |error| ~ 1e-10 relative: plenty for a float result
  x = _mm512_max_pd(_mm512_set1_pd(-745.0), _mm512_min_pd(_mm512_set1_pd(709.0), x));
  __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(0.6931471805599453), x);
  __m512d p = _mm512_set1_pd(1.0 / 362880.0);
  for (double c : {1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0})
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
  return _mm512_scalef_pd(p, n);
}

// erfc(a) for a >= 0.
inline __m512d erfc_pos_pd(__m512d a) {
  const __m512d one = _mm512_set1_pd(1.0);
  __m512d t = _mm512_div_pd(one, _mm512_fmadd_pd(_mm512_set1_pd(0.5), a, one));
  __m512d p = _mm512_set1_pd(0.17087277);
  for (double c :
       {-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223})
    p = _mm512_fmadd_pd(p, t, _mm512_set1_pd(c));
  return _mm512_mul_pd(t, exp_pd(_mm512_fnmadd_pd(a, a, p)));
}

// erf(z) for |z| < 0.5 (Taylor, 8 terms; truncation < 1e-10 relative).
inline __m512d erf_small_pd(__m512d z) {
  __m512d z2 = _mm512_mul_pd(z, z);
  __m512d p = _mm512_set1_pd(-1.0 / (5040.0 * 15.0));
  for (double c : {1.0 / (720.0 * 13.0), -1.0 / (120.0 * 11.0), 1.0 / (24.0 * 9.0), -1.0 / (6.0 * 7.0),
                   1.0 / (2.0 * 5.0), -1.0 / 3.0, 1.0})
    p = _mm512_fmadd_pd(p, z2, _mm512_set1_pd(c));
  return _mm512_mul_pd(_mm512_mul_pd(p, z), _mm512_set1_pd(1.1283791670955126));
}

// 1 + erf(z), without cancellation for negative z (it is erfc(|z|) there).
inline __m512d one_plus_erf_pd(__m512d z) {
  __m512d a = _mm512_abs_pd(z);
  __m512d c = erfc_pos_pd(a);
  __mmask8 neg = _mm512_cmp_pd_mask(z, _mm512_setzero_pd(), _CMP_LT_OQ);
  __m512d big = _mm512_mask_blend_pd(neg, _mm512_sub_pd(_mm512_set1_pd(2.0), c), c);
  __mmask8 small = _mm512_cmp_pd_mask(a, _mm512_set1_pd(0.5), _CMP_LT_OQ);
  return _mm512_mask_blend_pd(small, big, _mm512_add_pd(_mm512_set1_pd(1.0), erf_small_pd(z)));
}

// Applies f (double -> double, 8 lanes) to 16 floats.
template <typename F>
inline __m512 via_double(__m512 x, F f) {
  __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
  __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  __m256 rl = _mm512_cvtpd_ps(f(lo)), rh = _mm512_cvtpd_ps(f(hi));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(rl)), _mm256_castps_pd(rh), 1));
}

// GELU with exact erf: 0.5 x (1 + erf(x / sqrt 2)).
inline __m512 gelu_ps(__m512 x) {
  return via_double(x, [](__m512d xd) {
    __m512d z = _mm512_mul_pd(xd, _mm512_set1_pd(0.70710678118654752440));
    return _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(0.5), xd), one_plus_erf_pd(z));
  });
}

}  // namespace segmux::cpu::avx512
