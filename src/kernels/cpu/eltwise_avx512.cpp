// AVX-512 inner loops of the element-wise kernels (eltwise.cpp): binary ops on contiguous or scalar
// runs, exact GELU. Built with the AVX-512 flags; reached only through avx512::kEltwise.
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

}  // namespace

const EltwiseFns kEltwise = {run_inner<BinOp::add>, run_inner<BinOp::sub>, run_inner<BinOp::mul>, run_inner<BinOp::div>,
                             gelu};

}  // namespace segmux::cpu::avx512
