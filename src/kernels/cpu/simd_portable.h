// Plain C++ versions of the simd.h loops, written so the compiler can vectorise them (16-lane
// partial sums, no branches inside element loops, exp/erf by polynomials and exponent bits instead of
// libm calls). Included only by simd_generic.cpp (baseline x86-64) and simd_avx2.cpp (-mavx2 -mfma),
// each defining SEGMUX_KNS, the namespace segmux::cpu::SEGMUX_KNS its copy lives in. Both are built
// with -ffp-contract=off (the two levels give the same bits, and Rope stays bit-exact) and
// -fno-trapping-math (lets GCC turn the selects below into vector blends).
// No std:: templates or inline functions of other headers here: a copy compiled with AVX2 could
// otherwise replace the baseline one at link time (scripts/check_isa_objects.sh checks the objects).
#ifndef SEGMUX_KNS
#error "define SEGMUX_KNS (generic or avx2) before including simd_portable.h"
#endif
#include <cmath>
#include <cstdint>

#include "kernels/cpu/simd.h"

namespace segmux::cpu::SEGMUX_KNS {
namespace {

constexpr int64_t W = 16;  // lanes of the partial sums (the AVX-512 kernels' width)

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Horizontal sum of 16 lanes as a tree (the order _mm512_reduce_add_ps uses).
inline float hsum(float* acc) {
  for (int64_t w = W / 2; w >= 1; w /= 2)
    for (int64_t j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// exp(x): Cody-Waite reduction by ln2 (two-part constant), degree-7 polynomial on |r| <= ln2/2, scaling
// by 2^n in two normal factors (overflow to inf, gradual underflow, exactly 0 below -110). Rounding to
// the nearest integer by adding 1.5 * 2^23, whose low mantissa bits then hold n. NaN propagates.
inline float exp_f(float x) {
  x = x > 88.8f ? 88.8f : x;
  x = x < -110.f ? -110.f : x;
  const float magic = 12582912.f;
  const float t = x * 1.44269504088896341f + magic;
  const float n = t - magic;
  const int32_t ni = __builtin_bit_cast(int32_t, t) - __builtin_bit_cast(int32_t, magic);
  float r = x - n * 0.693145751953125f;
  r = r - n * 1.42860682030941723212e-6f;
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  return p * __builtin_bit_cast(float, (n1 + 127) << 23) * __builtin_bit_cast(float, (n2 + 127) << 23);
}

// exp(x) in double, |error| ~ 1e-10 relative (plenty for a float result); 1.5 * 2^52 rounds.
inline double exp_d(double x) {
  x = x > 709.0 ? 709.0 : x;
  x = x < -745.0 ? -745.0 : x;
  const double magic = 6755399441055744.0;
  const double t = x * 1.4426950408889634 + magic;
  const double n = t - magic;
  const int64_t ni = __builtin_bit_cast(int64_t, t) - __builtin_bit_cast(int64_t, magic);
  const double r = x - n * 0.6931471805599453;
  double p = 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int64_t n1 = ni >> 1, n2 = ni - n1;
  return p * __builtin_bit_cast(double, (n1 + 1023) << 52) * __builtin_bit_cast(double, (n2 + 1023) << 52);
}

// 1 + erf(z) without cancellation for negative z, as the AVX-512 kernels compute it: erfc by the
// Chebyshev fit erfc(a) = t exp(-a^2 + P(t)), t = 1/(1 + a/2), for |z| >= 0.5; Taylor below.
inline double one_plus_erf(double z) {
  const double a = __builtin_fabs(z);
  const double t = 1.0 / (0.5 * a + 1.0);
  double p = 0.17087277;
  p = p * t - 0.82215223;
  p = p * t + 1.48851587;
  p = p * t - 1.13520398;
  p = p * t + 0.27886807;
  p = p * t - 0.18628806;
  p = p * t + 0.09678418;
  p = p * t + 0.37409196;
  p = p * t + 1.00002368;
  p = p * t - 1.26551223;
  const double c = t * exp_d(p - a * a);
  const double big = z < 0.0 ? c : 2.0 - c;
  const double z2 = z * z;
  double q = -1.0 / (5040.0 * 15.0);
  q = q * z2 + 1.0 / (720.0 * 13.0);
  q = q * z2 - 1.0 / (120.0 * 11.0);
  q = q * z2 + 1.0 / (24.0 * 9.0);
  q = q * z2 - 1.0 / (6.0 * 7.0);
  q = q * z2 + 1.0 / (2.0 * 5.0);
  q = q * z2 - 1.0 / 3.0;
  q = q * z2 + 1.0;
  const double small = 1.0 + q * z * 1.1283791670955126;
  return a < 0.5 ? small : big;
}

// ---- element-wise ----

enum class BinOp { add, sub, mul, div };

template <BinOp op>
inline float apply(float a, float b) {
  if constexpr (op == BinOp::add) return a + b;
  if constexpr (op == BinOp::sub) return a - b;
  if constexpr (op == BinOp::mul) return a * b;
  return a / b;
}

template <BinOp op>
void binary(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = apply<op>(a[i], b[i]);
  } else if (sa == 1) {
    const float vb = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = apply<op>(a[i], vb);
  } else if (sb == 1) {
    const float va = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = apply<op>(va, b[i]);
  } else {
    const float r = apply<op>(*a, *b);
    for (int64_t i = 0; i < n; ++i) out[i] = r;
  }
}

void gelu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double xd = x[i];
    y[i] = float(0.5 * xd * one_plus_erf(xd * 0.70710678118654752440));
  }
}

// exp(x) in double to ~1e-15 relative (degree 12 on |r| <= ln2/2): sigmoid's float result then
// matches the reference's libm exp unless the value lies within ~1e-15 of a float rounding boundary,
// which sigmoid() checks for.
inline double exp_d_precise(double x) {
  x = x > 709.0 ? 709.0 : x;
  x = x < -745.0 ? -745.0 : x;
  const double magic = 6755399441055744.0;
  const double t = x * 1.4426950408889634 + magic;
  const double n = t - magic;
  const int64_t ni = __builtin_bit_cast(int64_t, t) - __builtin_bit_cast(int64_t, magic);
  double r = x - n * 6.93147180369123816490e-01;
  r = r - n * 1.90821492927058770002e-10;
  double p = 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int64_t n1 = ni >> 1, n2 = ni - n1;
  return p * __builtin_bit_cast(double, (n1 + 1023) << 52) * __builtin_bit_cast(double, (n2 + 1023) << 52);
}

inline double sigmoid_d(double v, double e) { return v >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e); }

void sigmoid(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double s = sigmoid_d(v, exp_d_precise(v >= 0 ? -v : v));
    // Near a float rounding boundary (or NaN): the reference's own formula with libm's exp.
    if (float(s * (1 - 1e-12)) != float(s * (1 + 1e-12)) || s != s)
      y[i] = float(v >= 0 ? 1.0 / (1.0 + __builtin_exp(-v)) : __builtin_exp(v) / (1.0 + __builtin_exp(v)));
    else
      y[i] = float(s);
  }
}

// ---- row-wise ----

float row_max(const float* x, int64_t n) {
  float m[W];
  for (int64_t j = 0; j < W; ++j) m[j] = -INFINITY;
  int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int64_t j = 0; j < W; ++j) m[j] = m[j] > x[i + j] ? m[j] : x[i + j];
  for (int64_t j = 0; i + j < n; ++j) m[j] = m[j] > x[i + j] ? m[j] : x[i + j];
  float r = m[0];
  for (int64_t j = 1; j < W; ++j) r = r > m[j] ? r : m[j];
  return r;
}

float row_sum(const float* x, int64_t n) {
  float acc[W] = {};
  int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int64_t j = 0; j < W; ++j) acc[j] += x[i + j];
  for (int64_t j = 0; i + j < n; ++j) acc[j] += x[i + j];
  return hsum(acc);
}

// Sum of (x - mean)^2.
float row_sq_dev(const float* x, int64_t n, float mean) {
  float acc[W] = {};
  int64_t i = 0;
  for (; i + W <= n; i += W)
    for (int64_t j = 0; j < W; ++j) {
      const float d = x[i + j] - mean;
      acc[j] += d * d;
    }
  for (int64_t j = 0; i + j < n; ++j) {
    const float d = x[i + j] - mean;
    acc[j] += d * d;
  }
  return hsum(acc);
}

void softmax_rows(const float* px, float* py, int64_t rows, int64_t len) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = px + r * len;
    float* y = py + r * len;
    const float mx = row_max(x, len);
    for (int64_t i = 0; i < len; ++i) y[i] = exp_f(x[i] - mx);
    const float inv = 1.f / row_sum(y, len);
    for (int64_t i = 0; i < len; ++i) y[i] *= inv;
  }
}

void softmax_columns(const float* x, float* y, int64_t len, int64_t inner, int64_t ncols) {
  float mx[W], s[W];
  for (int64_t c = 0; c < W; ++c) {
    mx[c] = -INFINITY;
    s[c] = 0.f;
  }
  for (int64_t j = 0; j < len; ++j)
    for (int64_t c = 0; c < ncols; ++c) mx[c] = mx[c] > x[j * inner + c] ? mx[c] : x[j * inner + c];
  for (int64_t j = 0; j < len; ++j)
    for (int64_t c = 0; c < ncols; ++c) {
      const float e = exp_f(x[j * inner + c] - mx[c]);
      y[j * inner + c] = e;
      s[c] += e;
    }
  for (int64_t c = 0; c < ncols; ++c) s[c] = 1.f / s[c];
  for (int64_t j = 0; j < len; ++j)
    for (int64_t c = 0; c < ncols; ++c) y[j * inner + c] *= s[c];
}

void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t n, float eps, const float* scale,
                     const float* bias, float* mean_out, float* rstd_out) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    float* yr = y + row * n;
    const float mean = row_sum(xr, n) / float(n);
    const float var = row_sq_dev(xr, n, mean) / float(n);
    const float rstd = 1.f / __builtin_sqrtf(var + eps);
    if (bias)
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * rstd * scale[i] + bias[i];
    else
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * rstd * scale[i];
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
    const float mean = row_sum(xg, n) / float(n);
    const float rstd = 1.f / __builtin_sqrtf(row_sq_dev(xg, n, mean) / float(n) + eps);
    const int64_t c0 = (w % groups) * cg;
    for (int64_t c = 0; c < cg; ++c) {
      // Per channel: y = x * a + b with a = rstd*scale, b = bias - mean*a.
      const float a = rstd * ps[c0 + c], b = pb[c0 + c] - mean * a;
      const float* xc = xg + c * spatial;
      float* yc = yg + c * spatial;
      for (int64_t i = 0; i < spatial; ++i) yc[i] = xc[i] * a + b;
    }
  }
}

// ---- Rope: y = x * cos2 + swap_pairs(x) * sin2, products rounded separately (bit-exact) ----

void rope_rows(const float* px, int64_t x_row, const float* c2, const float* s2, float* py, int64_t begin, int64_t end,
               int64_t L, int64_t D) {
  for (int64_t r = begin; r < end; ++r) {
    const float* x = px + r * x_row;
    const float* c = c2 + (r % L) * D;
    const float* s = s2 + (r % L) * D;
    float* y = py + r * D;
    for (int64_t i = 0; i + 1 < D; i += 2) {
      const float x0 = x[i], x1 = x[i + 1];
      y[i] = x0 * c[i] + x1 * s[i];
      y[i + 1] = x1 * c[i + 1] + x0 * s[i + 1];
    }
  }
}

// ---- attention tile ----

// C[M x N] (+)= A[M x K] * B[K x N], row-major with leading dimensions. Two rows and four k steps per
// pass over a row of C (one load and store of C per 4 products, B loads shared by the two rows); the
// sums are still formed in k order, so the result is that of the plain triple loop.
void small_gemm(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
                int64_t K, bool acc) {
  if (!acc)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = 0.f;
  int64_t i = 0;
  for (; i + 2 <= M; i += 2) {
    float* c = C + i * ldc;
    float* d = c + ldc;
    const float* a = A + i * lda;
    const float* e = a + lda;
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
      const float a0 = a[k], a1 = a[k + 1], a2 = a[k + 2], a3 = a[k + 3];
      const float e0 = e[k], e1 = e[k + 1], e2 = e[k + 2], e3 = e[k + 3];
      const float* b0 = B + k * ldb;
      const float *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
      for (int64_t j = 0; j < N; ++j) {
        const float x0 = b0[j], x1 = b1[j], x2 = b2[j], x3 = b3[j];
        c[j] = c[j] + a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3;
        d[j] = d[j] + e0 * x0 + e1 * x1 + e2 * x2 + e3 * x3;
      }
    }
    for (; k < K; ++k) {
      const float* b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j) {
        c[j] += a[k] * b[j];
        d[j] += e[k] * b[j];
      }
    }
  }
  for (; i < M; ++i) {
    float* c = C + i * ldc;
    for (int64_t k = 0; k < K; ++k) {
      const float ak = A[i * lda + k];
      const float* b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j) c[j] += ak * b[j];
    }
  }
}

// Scaled, masked scores of one query row; returns their maximum.
float mask_row(const AttentionTile& t, float* s, int64_t i, int64_t j0, int64_t nk) {
  if (t.fmask) {
    const float* mp = t.fmask + t.moff + i * t.mrow + j0 * t.mcol;
    for (int64_t j = 0; j < nk; ++j) s[j] = s[j] * t.scale + mp[j * t.mcol];
  } else if (t.bmask) {
    const bool* mp = t.bmask + t.moff + i * t.mrow + j0 * t.mcol;
    for (int64_t j = 0; j < nk; ++j) s[j] = mp[j * t.mcol] ? s[j] * t.scale : -INFINITY;
  } else {
    for (int64_t j = 0; j < nk; ++j) s[j] *= t.scale;
  }
  return row_max(s, nk);
}

void tile(const AttentionTile& t) {
  const int64_t KB = kAttentionKeyBlock, rows = t.rows, Dv = t.Dv;
  float* scores = t.scratch;  // [kAttentionQueryBlock, KB], then the output sums and the row statistics
  float* O = scores + kAttentionQueryBlock * KB;
  float* row_max_v = O + kAttentionQueryBlock * Dv;
  float* row_sum_v = row_max_v + kAttentionQueryBlock;
  for (int64_t i = 0; i < rows; ++i) {
    row_max_v[i] = -INFINITY;
    row_sum_v[i] = 0.f;
  }
  for (int64_t i = 0; i < rows * Dv; ++i) O[i] = 0.f;
  for (int64_t j0 = 0; j0 < t.Lk; j0 += KB) {
    const int64_t nk = min64(KB, t.Lk - j0);
    small_gemm(t.q, t.q_row, t.kt + j0, t.Lk, scores, KB, rows, nk, t.D, false);
    for (int64_t i = 0; i < rows; ++i) {
      float* s = scores + i * KB;
      const float m_old = row_max_v[i], m_blk = mask_row(t, s, i, j0, nk);
      const float m_new = m_old < m_blk ? m_blk : m_old;
      if (m_new == -INFINITY) {  // everything so far masked: contributes nothing
        for (int64_t j = 0; j < nk; ++j) s[j] = 0.f;
        continue;
      }
      for (int64_t j = 0; j < nk; ++j) s[j] = exp_f(s[j] - m_new);
      const float alpha = m_old == -INFINITY ? 0.f : __builtin_expf(m_old - m_new);
      row_sum_v[i] = row_sum_v[i] * alpha + row_sum(s, nk);
      row_max_v[i] = m_new;
      if (alpha != 1.f)
        for (int64_t d = 0; d < Dv; ++d) O[i * Dv + d] *= alpha;
    }
    small_gemm(scores, KB, t.v + j0 * t.v_row, t.v_row, O, Dv, rows, Dv, nk, true);
  }
  for (int64_t i = 0; i < rows; ++i) {
    const float inv = row_sum_v[i] > 0.f ? 1.f / row_sum_v[i] : 0.f;
    for (int64_t d = 0; d < Dv; ++d) t.out[i * t.out_row + d] = O[i * Dv + d] * inv;
  }
}

int64_t tile_scratch_floats(int64_t, int64_t Dv) { return kAttentionQueryBlock * (kAttentionKeyBlock + Dv + 2); }

}  // namespace

const EltwiseFns kEltwise = {
    binary<BinOp::add>, binary<BinOp::sub>, binary<BinOp::mul>, binary<BinOp::div>, gelu, sigmoid};
const NormFns kNorms = {softmax_rows, softmax_columns, layer_norm_rows, group_norm};
const RopeFns kRope = {rope_rows};
const AttentionFns kAttention = {tile, kAttentionQueryBlock, kAttentionQueryBlock, true, tile_scratch_floats};

}  // namespace segmux::cpu::SEGMUX_KNS
