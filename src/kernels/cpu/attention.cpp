// segmux Attention, flash-style: softmax(q k^T * scale + mask) v computed one (query block, key block)
// tile at a time with a running max and sum per query row, so no Lq x Lk score matrix is ever
// materialised. Layout: q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv] with equal leading (batch,
// head) dims; mask (optional) broadcastable to [..., Lq, Lk], f32 (added) or bool (true = attend).
// A query row whose keys are all masked gives zeros.
//
// The small GEMMs inside a tile use one register-blocked AVX-512 micro-kernel (6 rows x 64 columns).
// K is transposed once per call into a reused buffer so both tile GEMMs read B row-major.
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"

namespace segmux::cpu {
namespace {

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
  const __mmask16 m0 = tail_mask(ncols), m1 = tail_mask(std::max<int64_t>(0, ncols - 16)),
                  m2 = tail_mask(std::max<int64_t>(0, ncols - 32)), m3 = tail_mask(std::max<int64_t>(0, ncols - 48));
  SMX_ROW_DECL(0)
  SMX_ROW_DECL(1)
  SMX_ROW_DECL(2) SMX_ROW_DECL(3) SMX_ROW_DECL(4)
      SMX_ROW_DECL(5) if (accumulate){SMX_ROW_LOAD(0) SMX_ROW_LOAD(1) SMX_ROW_LOAD(2) SMX_ROW_LOAD(3) SMX_ROW_LOAD(4)
                                          SMX_ROW_LOAD(5)} __m512 b1 = _mm512_setzero_ps(),
                                                                  b2 = b1, b3 = b1;
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
    const int64_t nc = std::min<int64_t>(64, N - j);
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

constexpr int64_t kQueryBlock = 96;  // a multiple of the 6-row micro-kernel
constexpr int64_t kKeyBlock = 256;

struct ThreadScratch {
  Scratch scores, out, stats;
};

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(float scale_attr, bool has_scale) : scale_attr_(scale_attr), has_scale_(has_scale) {}

  void run(KernelContext& ctx) override {
    const Tensor& q = *ctx.inputs[0];
    const Tensor& k = *ctx.inputs[1];
    const Tensor& v = *ctx.inputs[2];
    const Tensor* mask = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
    const int r = q.rank();
    SEGMUX_CHECK(r >= 2 && k.rank() == r && v.rank() == r, ctx.node.describe(), ": q, k, v must have equal rank >= 2");
    const int64_t Lq = q.dim(-2), D = q.dim(-1), Lk = k.dim(-2), Dv = v.dim(-1);
    SEGMUX_CHECK(k.dim(-1) == D && v.dim(-2) == Lk, ctx.node.describe(), ": k/v shapes do not match q");
    int64_t BH = 1;
    for (int d = 0; d < r - 2; ++d) {
      SEGMUX_CHECK(k.dim(d) == q.dim(d) && v.dim(d) == q.dim(d), ctx.node.describe(), ": batch dims of q, k, v differ");
      BH *= q.dim(d);
    }
    Tensor& out = *ctx.outputs[0];
    if (out.numel() == 0) return;
    const float scale = has_scale_ ? scale_attr_ : 1.f / std::sqrt(float(D));
    // Mask strides over (batch dims..., Lq, Lk), 0 where broadcast.
    std::vector<int64_t> mstride(size_t(r), 0);
    if (mask) {
      SEGMUX_CHECK(mask->rank() <= r, ctx.node.describe(), ": mask rank exceeds the scores' rank");
      int64_t s = 1;
      for (int d = r - 1, md = mask->rank() - 1; md >= 0; --d, --md) {
        int64_t want = d == r - 1 ? Lk : d == r - 2 ? Lq : q.dim(d);
        int64_t have = mask->dim(md);
        SEGMUX_CHECK(have == want || have == 1, ctx.node.describe(), ": mask ", shape_str(mask->shape()),
                     " does not broadcast to the scores");
        mstride[size_t(d)] = have == 1 ? 0 : s;
        s *= have;
      }
    }
    if (Lk == 0) {  // no keys: every row is fully masked
      std::fill(out.data<float>(), out.data<float>() + out.numel(), 0.f);
      return;
    }
    const float* pq = q.data<float>();
    const float* pk = k.data<float>();
    const float* pv = v.data<float>();
    float* po = out.data<float>();
    const int nt = threads_of(ctx.num_threads);

    // K^T per (batch, head): [BH][D][Lk].
    float* kt = kt_.get(size_t(BH * D * Lk));
    parallel_chunks(BH, nt, [&](int64_t b, int64_t e) {
      for (int64_t bh = b; bh < e; ++bh) {
        const float* src = pk + bh * Lk * D;
        float* dst = kt + bh * D * Lk;
        for (int64_t j0 = 0; j0 < Lk; j0 += 16)
          for (int64_t d = 0; d < D; ++d)
            for (int64_t j = j0; j < std::min(Lk, j0 + 16); ++j) dst[d * Lk + j] = src[j * D + d];
      }
    });

    if (int(scratch_.size()) < nt) scratch_.resize(size_t(nt));
    const int64_t qblocks = (Lq + kQueryBlock - 1) / kQueryBlock;
    const bool bool_mask = mask && mask->dtype() == DType::boolean;
    const float* fmask = mask && !bool_mask ? mask->data<float>() : nullptr;
    const bool* bmask = bool_mask ? mask->data<bool>() : nullptr;
    parallel_items(BH * qblocks, nt, [&](int64_t item, int t) {
      ThreadScratch& ts = scratch_[size_t(t)];
      float* S = ts.scores.get(size_t(kQueryBlock * kKeyBlock));
      float* O = ts.out.get(size_t(kQueryBlock * Dv));
      float* stats = ts.stats.get(size_t(2 * kQueryBlock));
      float* row_max = stats;
      float* row_sum = stats + kQueryBlock;
      const int64_t bh = item / qblocks, i0 = (item % qblocks) * kQueryBlock;
      const int64_t rows = std::min(kQueryBlock, Lq - i0);
      const float* Q = pq + (bh * Lq + i0) * D;
      const float* Kt = kt + bh * D * Lk;
      const float* V = pv + bh * Lk * Dv;
      int64_t moff = 0;
      if (mask) {
        int64_t rem = bh;
        for (int d = r - 3; d >= 0; --d) {
          moff += (rem % q.dim(d)) * mstride[size_t(d)];
          rem /= q.dim(d);
        }
        moff += i0 * mstride[size_t(r - 2)];
      }
      const int64_t mrow = mstride[size_t(r - 2)], mcol = mstride[size_t(r - 1)];
      for (int64_t i = 0; i < rows; ++i) {
        row_max[i] = -INFINITY;
        row_sum[i] = 0.f;
      }
      std::fill(O, O + rows * Dv, 0.f);
      for (int64_t j0 = 0; j0 < Lk; j0 += kKeyBlock) {
        const int64_t nk = std::min(kKeyBlock, Lk - j0);
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
              for (int64_t l = 0; l < std::min<int64_t>(16, nk - j); ++l)
                if (mp[l * mcol]) keep |= __mmask16(1u << l);
              x = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), keep, x);
            }
            _mm512_mask_storeu_ps(s + j, km, x);
            vmax = _mm512_mask_max_ps(vmax, km, vmax, x);
          }
          const float m_old = row_max[i];
          const float m_new = std::max(m_old, hmax(vmax));
          if (m_new == -INFINITY) {  // everything so far masked: contributes nothing
            std::fill(s, s + nk, 0.f);
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
          const float alpha = m_old == -INFINITY ? 0.f : std::exp(m_old - m_new);
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
      float* dst = po + (bh * Lq + i0) * Dv;
      for (int64_t i = 0; i < rows; ++i) {
        const float inv = row_sum[i] > 0.f ? 1.f / row_sum[i] : 0.f;
        const __m512 vi = _mm512_set1_ps(inv);
        for (int64_t d = 0; d < Dv; d += 16) {
          __mmask16 km = tail_mask(Dv - d);
          _mm512_mask_storeu_ps(dst + i * Dv + d, km, _mm512_mul_ps(_mm512_maskz_loadu_ps(km, O + i * Dv + d), vi));
        }
      }
    });
  }

 private:
  float scale_attr_;
  bool has_scale_;
  Scratch kt_;
  std::vector<ThreadScratch> scratch_;
};

}  // namespace

std::unique_ptr<Kernel> make_attention(const KernelInit& init) {
  if (init.inputs.size() < 3) return nullptr;
  for (int i = 0; i < 3; ++i)
    if (!init.inputs[size_t(i)] || init.inputs[size_t(i)]->dtype != DType::f32) return nullptr;
  if (init.inputs.size() > 3 && init.inputs[3] && init.inputs[3]->dtype != DType::f32 &&
      init.inputs[3]->dtype != DType::boolean)
    return nullptr;
  return std::make_unique<AttentionKernel>(init.node.attr_float("scale", 0.f), init.node.has_attr("scale"));
}

}  // namespace segmux::cpu
