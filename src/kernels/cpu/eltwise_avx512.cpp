// AVX-512 inner loops of the element-wise kernels (eltwise.cpp): binary ops on contiguous or scalar
// runs, exact GELU, Sigmoid. Built with the AVX-512 flags; reached only through avx512::kEltwise.
#include "kernels/cpu/avx512_math.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu::avx512 {
namespace {

enum class BinOp { add, sub, mul, div };

template <BinOp op>
inline __m512 apply(__m512 a, __m512 b) {
  if constexpr (op == BinOp::add) return _mm512_add_ps(a, b);
  if constexpr (op == BinOp::sub) return _mm512_sub_ps(a, b);
  if constexpr (op == BinOp::mul) return _mm512_mul_ps(a, b);
  return _mm512_div_ps(a, b);
}

// out[i] = a[i*sa] op b[i*sb], sa and sb each 0 or 1.
template <BinOp op>
void run_inner(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  int64_t i = 0;
  if (sa == 1 && sb == 1) {
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, apply<op>(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    if (i < n) {
      __mmask16 m = tail_mask(n - i);
      _mm512_mask_storeu_ps(out + i, m, apply<op>(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
  } else if (sa == 1) {
    __m512 vb = _mm512_set1_ps(*b);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, apply<op>(_mm512_loadu_ps(a + i), vb));
    if (i < n) {
      __mmask16 m = tail_mask(n - i);
      // Masked-off lanes get 1.0 so Div never computes 0/0 in lanes that are discarded anyway.
      _mm512_mask_storeu_ps(out + i, m, apply<op>(_mm512_mask_loadu_ps(_mm512_set1_ps(1.f), m, a + i), vb));
    }
  } else if (sb == 1) {
    __m512 va = _mm512_set1_ps(*a);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, apply<op>(va, _mm512_loadu_ps(b + i)));
    if (i < n) {
      __mmask16 m = tail_mask(n - i);
      _mm512_mask_storeu_ps(out + i, m, apply<op>(va, _mm512_mask_loadu_ps(_mm512_set1_ps(1.f), m, b + i)));
    }
  } else {
    __m512 r = apply<op>(_mm512_set1_ps(*a), _mm512_set1_ps(*b));
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, r);
    if (i < n) _mm512_mask_storeu_ps(out + i, tail_mask(n - i), r);
  }
}

void gelu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, gelu_ps(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// exp(x) in double to ~1e-15 relative (degree 12 on |r| <= ln2/2, two-part ln2): see sigmoid().
inline __m512d exp_pd_precise(__m512d x) {
  x = _mm512_max_pd(_mm512_set1_pd(-745.0), _mm512_min_pd(_mm512_set1_pd(709.0), x));
  __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(6.93147180369123816490e-01), x);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(1.90821492927058770002e-10), r);
  __m512d p = _mm512_set1_pd(1.0 / 479001600.0);
  for (double c : {1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
                   1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0})
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
  return _mm512_scalef_pd(p, n);
}

// 8 lanes of the reference's double sigmoid; `unsure` flags lanes whose float rounding the ~1e-15
// error of exp_pd_precise could change (and NaN), which the caller recomputes with libm.
inline __m256 sigmoid8(__m256 xf, __mmask8* unsure) {
  const __m512d one = _mm512_set1_pd(1.0);
  __m512d v = _mm512_cvtps_pd(xf);
  __mmask8 neg = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_LT_OQ);
  __m512d e = exp_pd_precise(_mm512_mask_blend_pd(neg, _mm512_sub_pd(_mm512_setzero_pd(), v), v));
  __m512d s = _mm512_div_pd(_mm512_mask_blend_pd(neg, one, e), _mm512_add_pd(one, e));
  __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(s, _mm512_set1_pd(1 - 1e-12)));
  __m256 hi = _mm512_cvtpd_ps(_mm512_mul_pd(s, _mm512_set1_pd(1 + 1e-12)));
  *unsure = __mmask8(_mm256_movemask_ps(_mm256_cmp_ps(lo, hi, _CMP_NEQ_UQ)));
  return _mm512_cvtpd_ps(s);
}

void sigmoid(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t len = n - i < 8 ? n - i : 8;
    const __mmask8 m = __mmask8((1u << len) - 1u);
    __mmask8 unsure;
    __m256 r = sigmoid8(_mm256_maskz_loadu_ps(m, x + i), &unsure);
    _mm256_mask_storeu_ps(y + i, m, r);
    for (unsigned bits = unsigned(unsure & m); bits; bits &= bits - 1) {
      const int64_t j = i + __builtin_ctz(bits);
      const double v = x[j];
      y[j] = float(v >= 0 ? 1.0 / (1.0 + std::exp(-v)) : std::exp(v) / (1.0 + std::exp(v)));
    }
  }
}

}  // namespace

const EltwiseFns kEltwise = {
    run_inner<BinOp::add>, run_inner<BinOp::sub>, run_inner<BinOp::mul>, run_inner<BinOp::div>, gelu, sigmoid};

}  // namespace segmux::cpu::avx512
