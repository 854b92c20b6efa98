// AVX-512 loops of the row-wise kernels (norms.cpp): Softmax, LayerNormalization, GroupNorm.
// Statistics use two passes (mean, then squared deviations) in f32 with 16-lane partial sums.
// Built with the AVX-512 flags; reached only through avx512::kNorms.
#include "kernels/cpu/avx512_math.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu::avx512 {
namespace {

float row_max(const float* x, int64_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
  if (i < n) m = _mm512_mask_max_ps(m, tail_mask(n - i), m, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return hmax(m);
}

float row_sum(const float* x, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
  if (i < n) s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return hsum(_mm512_add_ps(s0, s1));
}

// Sum of (x - mean)^2.
float row_sq_dev(const float* x, int64_t n, float mean) {
  __m512 m = _mm512_set1_ps(mean);
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), m);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m);
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
  }
  for (; i + 16 <= n; i += 16) {
    __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), m);
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 d = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + i), m);
    s1 = _mm512_fmadd_ps(d, d, s1);
  }
  return hsum(_mm512_add_ps(s0, s1));
}

// Softmax of one contiguous row.
void softmax_row(const float* x, float* y, int64_t n) {
  const __m512 mx = _mm512_set1_ps(row_max(x, n));
  __m512 s = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    _mm512_storeu_ps(y + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 e = _mm512_maskz_mov_ps(k, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mx)));
    _mm512_mask_storeu_ps(y + i, k, e);
    s = _mm512_add_ps(s, e);
  }
  const __m512 inv = _mm512_set1_ps(1.f / hsum(s));
  for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), inv));
  }
}

// Softmax over a strided axis: len values at stride `inner`, 16 columns at a time (mask k).
void softmax_columns(const float* x, float* y, int64_t len, int64_t inner, __mmask16 k) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < len; ++j) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, k, x + j * inner));
  __m512 s = _mm512_setzero_ps();
  for (int64_t j = 0; j < len; ++j) {
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j * inner), mx));
    _mm512_mask_storeu_ps(y + j * inner, k, e);
    s = _mm512_add_ps(s, e);
  }
  __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), s);
  for (int64_t j = 0; j < len; ++j)
    _mm512_mask_storeu_ps(y + j * inner, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + j * inner), inv));
}

// y = (x - mean) * rstd * scale + bias over one row (scale/bias may be null = 1 / 0).
void normalize_row(const float* x, float* y, int64_t n, float mean, float rstd, const float* scale, const float* bias) {
  const __m512 vm = _mm512_set1_ps(mean), vr = _mm512_set1_ps(rstd);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), vr);
    if (scale) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, scale + i));
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + i));
    _mm512_mask_storeu_ps(y + i, k, v);
  }
}

void softmax_rows(const float* x, float* y, int64_t rows, int64_t len) {
  for (int64_t r = 0; r < rows; ++r) softmax_row(x + r * len, y + r * len, len);
}

void softmax_columns_n(const float* x, float* y, int64_t len, int64_t inner, int64_t ncols) {
  softmax_columns(x, y, len, inner, tail_mask(ncols));
}

void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t n, float eps, const float* scale,
                     const float* bias, float* mean_out, float* rstd_out) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    float mean = row_sum(xr, n) / float(n);
    float var = row_sq_dev(xr, n, mean) / float(n);
    float rstd = 1.f / __builtin_sqrtf(var + eps);
    normalize_row(xr, y + row * n, n, mean, rstd, scale, bias);
    if (mean_out) mean_out[row] = mean;
    if (rstd_out) rstd_out[row] = rstd;
  }
}

void group_norm(const float* px, float* py, int64_t begin, int64_t end, int64_t groups, int64_t cg, int64_t spatial,
                float eps, const float* ps, const float* pb) {
  const int64_t n = cg * spatial;
  for (int64_t w = begin; w < end; ++w) {
    const float* xg = px + w * n;
    float* yg = py + w * n;
    float mean = row_sum(xg, n) / float(n);
    float rstd = 1.f / __builtin_sqrtf(row_sq_dev(xg, n, mean) / float(n) + eps);
    const int64_t c0 = (w % groups) * cg;
    for (int64_t c = 0; c < cg; ++c) {
      // Per channel: y = x * a + b with a = rstd*scale, b = bias - mean*a.
      float a = rstd * ps[c0 + c], bb = pb[c0 + c] - mean * a;
      const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(bb);
      const float* xc = xg + c * spatial;
      float* yc = yg + c * spatial;
      for (int64_t i = 0; i < spatial; i += 16) {
        __mmask16 k = tail_mask(spatial - i);
        _mm512_mask_storeu_ps(yc + i, k, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, xc + i), va, vb));
      }
    }
  }
}

}  // namespace

const NormFns kNorms = {softmax_rows, softmax_columns_n, layer_norm_rows, group_norm};

}  // namespace segmux::cpu::avx512
