// AVX-512 tile of the flash-attention kernel (attention.cpp): the small GEMMs of a (query block, key
// block) tile use one register-blocked micro-kernel (6 rows x 64 columns), then the running softmax.
// Built with the AVX-512 flags; reached only through avx512::kAttention.
#include <cmath>

#include "kernels/cpu/avx512_math.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu::avx512 {
namespace {

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a < b ? b : a; }

// C[R x ncols] (+)= A[R x K] * B[K x ncols], ncols <= 16*NV, NV <= 4, R <= 6. Every accumulator is a
// named variable: GCC keeps an array of __m512 accumulators in memory and stores it back on every k
// step (store-bound, 2.3x slower). 24 accumulators + 4 B vectors + 1 broadcast fit the 32 registers.
// Columns beyond ncols are neither read nor written (masks).
#define SMX_DECL(i, j) __m512 c##i##j = _mm512_setzero_ps();
#define SMX_ROW_DECL(i) SMX_DECL(i, 0) SMX_DECL(i, 1) SMX_DECL(i, 2) SMX_DECL(i, 3)
#define SMX_LOAD(i, j) \
  if constexpr (R > i && NV > j) c##i##j = _mm512_maskz_loadu_ps(m##j, C + i * ldc + 16 * j);
#define SMX_ROW_LOAD(i) SMX_LOAD(i, 0) SMX_LOAD(i, 1) SMX_LOAD(i, 2) SMX_LOAD(i, 3)
#define SMX_FMA(i, j) \
  if constexpr (NV > j) c##i##j = _mm512_fmadd_ps(a, b##j, c##i##j);
#define SMX_ROW_FMA(i)                                      \
  if constexpr (R > i) {                                    \
    const __m512 a = _mm512_set1_ps(A[i * lda + k]);        \
    SMX_FMA(i, 0) SMX_FMA(i, 1) SMX_FMA(i, 2) SMX_FMA(i, 3) \
  }
#define SMX_STORE(i, j) \
  if constexpr (R > i && NV > j) _mm512_mask_storeu_ps(C + i * ldc + 16 * j, m##j, c##i##j);
#define SMX_ROW_STORE(i) SMX_STORE(i, 0) SMX_STORE(i, 1) SMX_STORE(i, 2) SMX_STORE(i, 3)

template <int R, int NV>
inline void micro_kernel(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t K,
                         int64_t ncols, bool accumulate) {
  const __mmask16 m0 = tail_mask(ncols), m1 = tail_mask(max64(0, ncols - 16)), m2 = tail_mask(max64(0, ncols - 32)),
                  m3 = tail_mask(max64(0, ncols - 48));
  // clang-format off
  SMX_ROW_DECL(0) SMX_ROW_DECL(1) SMX_ROW_DECL(2) SMX_ROW_DECL(3) SMX_ROW_DECL(4) SMX_ROW_DECL(5)
  if (accumulate) {
    SMX_ROW_LOAD(0) SMX_ROW_LOAD(1) SMX_ROW_LOAD(2) SMX_ROW_LOAD(3) SMX_ROW_LOAD(4) SMX_ROW_LOAD(5)
  }
  __m512 b1 = _mm512_setzero_ps(), b2 = b1, b3 = b1;
  // clang-format on
  for (int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b);
    if constexpr (NV > 1) b1 = _mm512_maskz_loadu_ps(m1, b + 16);
    if constexpr (NV > 2) b2 = _mm512_maskz_loadu_ps(m2, b + 32);
    if constexpr (NV > 3) b3 = _mm512_maskz_loadu_ps(m3, b + 48);
    SMX_ROW_FMA(0) SMX_ROW_FMA(1) SMX_ROW_FMA(2) SMX_ROW_FMA(3) SMX_ROW_FMA(4) SMX_ROW_FMA(5)
  }
  SMX_ROW_STORE(0) SMX_ROW_STORE(1) SMX_ROW_STORE(2) SMX_ROW_STORE(3) SMX_ROW_STORE(4) SMX_ROW_STORE(5)
}
#undef SMX_DECL
#undef SMX_ROW_DECL
#undef SMX_LOAD
#undef SMX_ROW_LOAD
#undef SMX_FMA
#undef SMX_ROW_FMA
#undef SMX_STORE
#undef SMX_ROW_STORE

template <int NV>
void gemm_columns(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t K,
                  int64_t nc, bool acc) {
  int64_t i = 0;
  for (; i + 6 <= M; i += 6) micro_kernel<6, NV>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, nc, acc);
  switch (M - i) {
    case 5:
      micro_kernel<5, NV>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, nc, acc);
      break;
    case 4:
      micro_kernel<4, NV>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, nc, acc);
      break;
    case 3:
      micro_kernel<3, NV>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, nc, acc);
      break;
    case 2:
      micro_kernel<2, NV>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, nc, acc);
      break;
    case 1:
      micro_kernel<1, NV>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, nc, acc);
      break;
    default:
      break;
  }
}

// C[M x N] (+)= A[M x K] * B[K x N], all row-major with leading dimensions.
void small_gemm(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
                int64_t K, bool acc) {
  for (int64_t j = 0; j < N; j += 64) {
    const int64_t nc = min64(64, N - j);
    switch ((nc + 15) / 16) {
      case 1:
        gemm_columns<1>(A, lda, B + j, ldb, C + j, ldc, M, K, nc, acc);
        break;
      case 2:
        gemm_columns<2>(A, lda, B + j, ldb, C + j, ldc, M, K, nc, acc);
        break;
      case 3:
        gemm_columns<3>(A, lda, B + j, ldb, C + j, ldc, M, K, nc, acc);
        break;
      default:
        gemm_columns<4>(A, lda, B + j, ldb, C + j, ldc, M, K, nc, acc);
        break;
    }
  }
}

void tile(const AttentionTile& t) {
  constexpr int64_t kKeyBlock = kAttentionKeyBlock;
  const int64_t rows = t.rows, D = t.D, Lk = t.Lk, Dv = t.Dv, moff = t.moff;
  const float scale = t.scale;
  const float *Q = t.q, *Kt = t.kt, *V = t.v, *fmask = t.fmask;
  const bool* bmask = t.bmask;
  float *S = t.scores, *O = t.acc, *dst = t.out;
  float* row_max = t.stats;
  float* row_sum = t.stats + kAttentionQueryBlock;
  const int64_t mrow = t.mrow, mcol = t.mcol;
  for (int64_t i = 0; i < rows; ++i) {
    row_max[i] = -INFINITY;
    row_sum[i] = 0.f;
  }
  for (int64_t i = 0; i < rows * Dv; ++i) O[i] = 0.f;
  for (int64_t j0 = 0; j0 < Lk; j0 += kKeyBlock) {
    const int64_t nk = min64(kKeyBlock, Lk - j0);
    small_gemm(Q, D, Kt + j0, Lk, S, kKeyBlock, rows, nk, D, false);
    for (int64_t i = 0; i < rows; ++i) {
      float* s = S + i * kKeyBlock;
      const __m512 vs = _mm512_set1_ps(scale);
      __m512 vmax = _mm512_set1_ps(-INFINITY);
      for (int64_t j = 0; j < nk; j += 16) {
        __mmask16 km = tail_mask(nk - j);
        __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(km, s + j), vs);
        if (fmask) {
          const float* mp = fmask + moff + i * mrow + (j0 + j) * mcol;
          __m512 mv = mcol ? _mm512_maskz_loadu_ps(km, mp) : _mm512_set1_ps(*mp);
          x = _mm512_add_ps(x, mv);
        } else if (bmask) {
          const bool* mp = bmask + moff + i * mrow + (j0 + j) * mcol;
          __mmask16 keep = 0;
          for (int64_t l = 0; l < min64(16, nk - j); ++l)
            if (mp[l * mcol]) keep |= __mmask16(1u << l);
          x = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), keep, x);
        }
        _mm512_mask_storeu_ps(s + j, km, x);
        vmax = _mm512_mask_max_ps(vmax, km, vmax, x);
      }
      const float m_old = row_max[i];
      const float vm_max = hmax(vmax);
      const float m_new = m_old < vm_max ? vm_max : m_old;
      if (m_new == -INFINITY) {  // everything so far masked: contributes nothing
        for (int64_t j = 0; j < nk; ++j) s[j] = 0.f;
        continue;
      }
      const __m512 vm = _mm512_set1_ps(m_new);
      __m512 vsum = _mm512_setzero_ps();
      for (int64_t j = 0; j < nk; j += 16) {
        __mmask16 km = tail_mask(nk - j);
        __m512 p = _mm512_maskz_mov_ps(km, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(km, s + j), vm)));
        _mm512_mask_storeu_ps(s + j, km, p);
        vsum = _mm512_add_ps(vsum, p);
      }
      const float alpha = m_old == -INFINITY ? 0.f : __builtin_expf(m_old - m_new);
      row_sum[i] = row_sum[i] * alpha + hsum(vsum);
      row_max[i] = m_new;
      if (alpha != 1.f) {
        float* o = O + i * Dv;
        const __m512 va = _mm512_set1_ps(alpha);
        for (int64_t d = 0; d < Dv; d += 16) {
          __mmask16 km = tail_mask(Dv - d);
          _mm512_mask_storeu_ps(o + d, km, _mm512_mul_ps(_mm512_maskz_loadu_ps(km, o + d), va));
        }
      }
    }
    small_gemm(S, kKeyBlock, V + j0 * Dv, Dv, O, Dv, rows, Dv, nk, true);
  }
  for (int64_t i = 0; i < rows; ++i) {
    const float inv = row_sum[i] > 0.f ? 1.f / row_sum[i] : 0.f;
    const __m512 vi = _mm512_set1_ps(inv);
    for (int64_t d = 0; d < Dv; d += 16) {
      __mmask16 km = tail_mask(Dv - d);
      _mm512_mask_storeu_ps(dst + i * Dv + d, km, _mm512_mul_ps(_mm512_maskz_loadu_ps(km, O + i * Dv + d), vi));
    }
  }
}

}  // namespace

const AttentionFns kAttention = {tile};

}  // namespace segmux::cpu::avx512
