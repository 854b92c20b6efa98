// AVX-512 tile of the flash-attention kernel (attention.cpp), queries in the vector lanes.
//
// A tile is up to kSub sub-tiles of kQT = 48 queries (3 vectors). Scores are computed transposed,
// S^T[key][query] = K Q^T: the micro-kernel broadcasts K elements (K read as it is, [Lk, D], so no
// transpose per call) against Q^T held per sub-tile, and P V is computed as O^T[d][query] += V[key][d]
// P^T[key][query] (V read as it is). With queries in lanes the online softmax needs no horizontal
// reduction: the running max, the sum and the rescale factor of 48 queries are 3 vectors, and the
// block max is taken on the accumulators before they are stored. Head dims of 32 (the memory
// attention's) make the exp cost matter, so it is cut down: Q is pre-scaled by scale * log2(e), the
// mask (key bias) initialises the accumulators, and softmax is exp2 of a degree-6 polynomial.
//
// Key blocks are the outer loop and the sub-tiles the inner one, so a block of K and V is read from
// memory once per tile (kSub * 48 queries), not once per 48 queries.
//
// Masked key blocks: with a key-only mask (broadcast over queries, e.g. the decoder's -1e30 bias on
// empty memory slots), a block whose every key bias is below kDeadBias is deferred until the other
// blocks are done, then skipped for a sub-tile when a Cauchy-Schwarz bound (|q| max|k| + the block's
// largest bias) shows that no score of it comes within 200 (log2 units) of each query's running max:
// exp2 then gives exactly 0 for every key of the block and the max does not change, so skipping gives
// the same result as computing it. A query whose keys are all masked by a finite bias (a uniform
// average in the reference) fails the bound and computes every block.
#include <cmath>

#include "kernels/cpu/avx512_math.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu::avx512 {
namespace {

constexpr int64_t kQT = 48;   // queries per sub-tile: 3 vectors
constexpr int64_t kSub = 8;   // sub-tiles per tile
constexpr int64_t kKB = 128;  // keys per block
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kDeadBias = -1e6f;  // log2 units; blocks biased below this are candidates for skipping

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// 2^x for x <= 0 (softmax arguments; NaN propagates): x = n + r, |r| <= 1/2, 2^r by its degree-6 Taylor
// polynomial in r ln2 (relative error < 1.3e-7), scaled by 2^n with scalef; below -160 the result is
// exactly 0 (masked -inf scores contribute nothing).
inline __m512 exp2_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-160.f), x);  // NaN is the second operand: kept
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.5403530393381608e-4f);  // ln2^6 / 720
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3333558146428443e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.6181291076284772e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.5504108664821580e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.24022650695910071f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.69314718055994531f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

// Accumulators of the R x 3 micro-kernels are named variables (GCC keeps an array of __m512 in memory
// and stores it on every step). 24 accumulators + 3 B vectors + 1 broadcast fit the 32 registers.
#define AX_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0;
#define AX_ROWS(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)

// S^T rows [R keys][48 queries] = bias + K[R, D] Q^T[D, 48]; stores them at st (row stride kQT) and
// folds them into the block max bm[48]. The block max stays in memory: 3 more live registers make GCC
// spill the B vectors of the inner loop. INIT 0: no bias; 1: one bias per key (bias[i]); 2: a bias
// tile (bias + i * kQT, 48 values per key).
template <int R, int INIT>
inline void qk_rows(const float* K, int64_t D, const float* qt, const float* bias, float* st, float* bm) {
  AX_ROWS(AX_DECL)
#define QK_INIT(i)                                    \
  if constexpr (R > i) {                              \
    if constexpr (INIT == 1) {                        \
      c##i##0 = _mm512_set1_ps(bias[i]);              \
      c##i##1 = c##i##0;                              \
      c##i##2 = c##i##0;                              \
    } else if constexpr (INIT == 2) {                 \
      c##i##0 = _mm512_loadu_ps(bias + i * kQT);      \
      c##i##1 = _mm512_loadu_ps(bias + i * kQT + 16); \
      c##i##2 = _mm512_loadu_ps(bias + i * kQT + 32); \
    }                                                 \
  }
  AX_ROWS(QK_INIT)
#undef QK_INIT
  for (int64_t d = 0; d < D; ++d) {
    const __m512 b0 = _mm512_loadu_ps(qt + d * kQT), b1 = _mm512_loadu_ps(qt + d * kQT + 16),
                 b2 = _mm512_loadu_ps(qt + d * kQT + 32);
#define QK_FMA(i)                                  \
  if constexpr (R > i) {                           \
    const __m512 a = _mm512_set1_ps(K[i * D + d]); \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);     \
    c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);     \
    c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2);     \
  }
    AX_ROWS(QK_FMA)
#undef QK_FMA
  }
#define QK_STORE(i)                               \
  if constexpr (R > i) {                          \
    _mm512_storeu_ps(st + i * kQT, c##i##0);      \
    _mm512_storeu_ps(st + i * kQT + 16, c##i##1); \
    _mm512_storeu_ps(st + i * kQT + 32, c##i##2); \
  }
  AX_ROWS(QK_STORE)
#undef QK_STORE
  // Block max over the rows (a tree), then into bm.
#define QK_MAX(i, j)                           \
  if constexpr (R > j) {                       \
    c##i##0 = _mm512_max_ps(c##i##0, c##j##0); \
    c##i##1 = _mm512_max_ps(c##i##1, c##j##1); \
    c##i##2 = _mm512_max_ps(c##i##2, c##j##2); \
  }
  QK_MAX(0, 4)
  QK_MAX(1, 5) QK_MAX(2, 6) QK_MAX(3, 7) QK_MAX(0, 2) QK_MAX(1, 3) QK_MAX(0, 1)
#undef QK_MAX
      _mm512_storeu_ps(bm, _mm512_max_ps(_mm512_loadu_ps(bm), c00));
  _mm512_storeu_ps(bm + 16, _mm512_max_ps(_mm512_loadu_ps(bm + 16), c01));
  _mm512_storeu_ps(bm + 32, _mm512_max_ps(_mm512_loadu_ps(bm + 32), c02));
}

// O^T rows [R dims][48 queries] += V[nk, R]^T P^T[nk, 48]; V points at (key 0, first dim), row stride Dv.
template <int R>
inline void pv_rows(const float* V, int64_t Dv, const float* pt, int64_t nk, float* ot) {
  AX_ROWS(AX_DECL)
#define PV_LOAD(i)                                \
  if constexpr (R > i) {                          \
    c##i##0 = _mm512_loadu_ps(ot + i * kQT);      \
    c##i##1 = _mm512_loadu_ps(ot + i * kQT + 16); \
    c##i##2 = _mm512_loadu_ps(ot + i * kQT + 32); \
  }
  AX_ROWS(PV_LOAD)
#undef PV_LOAD
  for (int64_t j = 0; j < nk; ++j) {
    const __m512 b0 = _mm512_loadu_ps(pt + j * kQT), b1 = _mm512_loadu_ps(pt + j * kQT + 16),
                 b2 = _mm512_loadu_ps(pt + j * kQT + 32);
#define PV_FMA(i)                                   \
  if constexpr (R > i) {                            \
    const __m512 a = _mm512_set1_ps(V[j * Dv + i]); \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);      \
    c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);      \
    c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2);      \
  }
    AX_ROWS(PV_FMA)
#undef PV_FMA
  }
#define PV_STORE(i)                               \
  if constexpr (R > i) {                          \
    _mm512_storeu_ps(ot + i * kQT, c##i##0);      \
    _mm512_storeu_ps(ot + i * kQT + 16, c##i##1); \
    _mm512_storeu_ps(ot + i * kQT + 32, c##i##2); \
  }
  AX_ROWS(PV_STORE)
#undef PV_STORE
}
#undef AX_DECL
#undef AX_ROWS

template <int INIT>
void qk_block(const float* K, int64_t D, const float* qt, const float* bias, float* st, int64_t nk, float* bm) {
  const int64_t bstep = INIT == 2 ? kQT : INIT == 1 ? 1 : 0;
  int64_t j = 0;
  for (; j + 8 <= nk; j += 8) qk_rows<8, INIT>(K + j * D, D, qt, bias + j * bstep, st + j * kQT, bm);
  const float* kj = K + j * D;
  const float* bj = bias + j * bstep;
  float* sj = st + j * kQT;
  switch (nk - j) {
    case 7:
      qk_rows<7, INIT>(kj, D, qt, bj, sj, bm);
      break;
    case 6:
      qk_rows<6, INIT>(kj, D, qt, bj, sj, bm);
      break;
    case 5:
      qk_rows<5, INIT>(kj, D, qt, bj, sj, bm);
      break;
    case 4:
      qk_rows<4, INIT>(kj, D, qt, bj, sj, bm);
      break;
    case 3:
      qk_rows<3, INIT>(kj, D, qt, bj, sj, bm);
      break;
    case 2:
      qk_rows<2, INIT>(kj, D, qt, bj, sj, bm);
      break;
    case 1:
      qk_rows<1, INIT>(kj, D, qt, bj, sj, bm);
      break;
    default:
      break;
  }
}

void pv_block(const float* V, int64_t Dv, const float* pt, int64_t nk, float* ot) {
  int64_t d = 0;
  for (; d + 8 <= Dv; d += 8) pv_rows<8>(V + d, Dv, pt, nk, ot + d * kQT);
  switch (Dv - d) {
    case 7:
      pv_rows<7>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    case 6:
      pv_rows<6>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    case 5:
      pv_rows<5>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    case 4:
      pv_rows<4>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    case 3:
      pv_rows<3>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    case 2:
      pv_rows<2>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    case 1:
      pv_rows<1>(V + d, Dv, pt, nk, ot + d * kQT);
      break;
    default:
      break;
  }
}

// Online softmax of one block: new running max from the block max bm, st[nk][48] -> 2^(s - max),
// running sums and O^T rescaled by 2^(old max - new max). A query whose max is still -inf (all keys so
// far masked) uses 0 as its max: its probabilities and its rescale factor are then 0.
void softmax_block(float* st, int64_t nk, const float* bm, float* mx, float* sm, float* ot, int64_t Dv) {
  __m512 msafe[3], alpha[3], sum[3];
  __mmask16 rescale = 0;
  for (int v = 0; v < 3; ++v) {
    const __m512 mold = _mm512_loadu_ps(mx + 16 * v);
    const __m512 mnew = _mm512_max_ps(_mm512_loadu_ps(bm + 16 * v), mold);
    msafe[v] =
        _mm512_mask_mov_ps(mnew, _mm512_cmp_ps_mask(mnew, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), _mm512_setzero_ps());
    alpha[v] = exp2_ps(_mm512_sub_ps(mold, msafe[v]));
    rescale |= _mm512_cmp_ps_mask(alpha[v], _mm512_set1_ps(1.f), _CMP_NEQ_UQ);
    _mm512_storeu_ps(mx + 16 * v, mnew);
    sum[v] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < nk; ++j) {
    float* s = st + j * kQT;
    const __m512 p0 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s), msafe[0]));
    const __m512 p1 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s + 16), msafe[1]));
    const __m512 p2 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s + 32), msafe[2]));
    _mm512_storeu_ps(s, p0);
    _mm512_storeu_ps(s + 16, p1);
    _mm512_storeu_ps(s + 32, p2);
    sum[0] = _mm512_add_ps(sum[0], p0);
    sum[1] = _mm512_add_ps(sum[1], p1);
    sum[2] = _mm512_add_ps(sum[2], p2);
  }
  for (int v = 0; v < 3; ++v)
    _mm512_storeu_ps(sm + 16 * v, _mm512_fmadd_ps(_mm512_loadu_ps(sm + 16 * v), alpha[v], sum[v]));
  if (rescale)
    for (int64_t d = 0; d < Dv; ++d)
      for (int v = 0; v < 3; ++v) {
        float* o = ot + d * kQT + 16 * v;
        _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_loadu_ps(o), alpha[v]));
      }
}

// Per-tile state of one sub-tile: scaled Q^T [D][48], O^T [Dv][48], running max and sum, |q| (log2 units).
struct Sub {
  float *qt, *ot, *mx, *sm, *qn;
  int64_t i0, rows;
};

// Scratch layout (floats, 64-byte aligned pieces).
inline int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
inline int64_t sub_floats(int64_t D, int64_t Dv) { return round16(D * kQT) + round16(Dv * kQT) + 3 * kQT; }
int64_t scratch_floats(int64_t D, int64_t Dv) { return 16 + kSub * sub_floats(D, Dv) + 2 * kKB * kQT + kKB + kQT; }

class TileRunner {
 public:
  explicit TileRunner(const AttentionTile& t) : t_(t) {
    float* p = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(t.scratch) + 63) & ~uintptr_t(63));
    nsub_ = (t.rows + kQT - 1) / kQT;
    const float qscale = t.scale * kLog2e;
    for (int64_t g = 0; g < nsub_; ++g) {
      Sub& s = sub_[g];
      s.qt = p;
      s.ot = s.qt + round16(t.D * kQT);
      s.mx = s.ot + round16(t.Dv * kQT);
      s.sm = s.mx + kQT;
      s.qn = s.sm + kQT;
      p += sub_floats(t.D, t.Dv);
      s.i0 = g * kQT;
      s.rows = min64(kQT, t.rows - s.i0);
      for (int64_t q = 0; q < kQT; ++q) {
        float n2 = 0.f;
        for (int64_t d = 0; d < t.D; ++d) {
          const float x = q < s.rows ? t.q[(s.i0 + q) * t.D + d] * qscale : 0.f;
          s.qt[d * kQT + q] = x;
          n2 += x * x;
        }
        s.qn[q] = std::sqrt(n2);
        s.mx[q] = -INFINITY;
        s.sm[q] = 0.f;
      }
      for (int64_t i = 0; i < t.Dv * kQT; ++i) s.ot[i] = 0.f;
    }
    st_ = p;
    mt_ = st_ + kKB * kQT;
    kbias_ = mt_ + kKB * kQT;
    key_only_ = (t.fmask || t.bmask) && t.mrow == 0;
  }

  void run() {
    const int64_t nblocks = (t_.Lk + kKB - 1) / kKB;
    bool deferred = false;
    for (int64_t b = 0; b < nblocks; ++b) {
      if (key_only_ && key_bias(b) < kDeadBias) {
        deferred = true;
        continue;
      }
      for (int64_t g = 0; g < nsub_; ++g) block(sub_[g], b);
    }
    if (deferred)
      for (int64_t b = 0; b < nblocks; ++b) {
        const float bmax = key_bias(b);
        if (!(bmax < kDeadBias)) continue;
        const float kmax = key_norm_max(b);
        for (int64_t g = 0; g < nsub_; ++g)
          if (!skippable(sub_[g], kmax, bmax)) block(sub_[g], b);
      }
    for (int64_t g = 0; g < nsub_; ++g) finish(sub_[g]);
  }

 private:
  // Keys of block b: kbias_ = their bias (log2 units); returns the largest.
  float key_bias(int64_t b) {
    const int64_t j0 = b * kKB, nk = min64(kKB, t_.Lk - j0);
    float m = -INFINITY;
    for (int64_t j = 0; j < nk; ++j) {
      const int64_t at = t_.moff + (j0 + j) * t_.mcol;
      const float x = t_.fmask ? t_.fmask[at] * kLog2e : t_.bmask[at] ? 0.f : -INFINITY;
      kbias_[j] = x;
      m = x > m ? x : m;
    }
    return m;
  }

  float key_norm_max(int64_t b) const {
    const int64_t j0 = b * kKB, nk = min64(kKB, t_.Lk - j0);
    float m = 0.f;
    for (int64_t j = 0; j < nk; ++j) {
      const float* k = t_.k + (j0 + j) * t_.D;
      float n2 = 0.f;
      for (int64_t d = 0; d < t_.D; ++d) n2 += k[d] * k[d];
      m = n2 > m || n2 != n2 ? n2 : m;  // NaN: never skippable
    }
    return std::sqrt(m);
  }

  // True when no key of a deferred block can reach 2^-200 of any query's running max (see the top).
  bool skippable(const Sub& s, float kmax, float bmax) const {
    for (int64_t q = 0; q < s.rows; ++q) {
      const float hi = s.qn[q] * kmax * 1.001f + 1.f + bmax + 200.f;
      if (!(hi < s.mx[q])) return false;
    }
    return true;
  }

  // Bias tile [nk][48] of a general mask (per query and key), log2 units; pad queries get 0.
  void mask_tile(const Sub& s, int64_t j0, int64_t nk) {
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t q = 0; q < kQT; ++q) {
        float x = 0.f;
        if (q < s.rows) {
          const int64_t at = t_.moff + (s.i0 + q) * t_.mrow + (j0 + j) * t_.mcol;
          x = t_.fmask ? t_.fmask[at] * kLog2e : t_.bmask[at] ? 0.f : -INFINITY;
        }
        mt_[j * kQT + q] = x;
      }
  }

  void block(Sub& s, int64_t b) {
    const int64_t j0 = b * kKB, nk = min64(kKB, t_.Lk - j0);
    const float* K = t_.k + j0 * t_.D;
    float* bm = kbias_ + kKB;
    for (int64_t q = 0; q < kQT; ++q) bm[q] = -INFINITY;
    if (key_only_) {
      qk_block<1>(K, t_.D, s.qt, kbias_, st_, nk, bm);
    } else if (t_.fmask || t_.bmask) {
      mask_tile(s, j0, nk);
      qk_block<2>(K, t_.D, s.qt, mt_, st_, nk, bm);
    } else {
      qk_block<0>(K, t_.D, s.qt, nullptr, st_, nk, bm);
    }
    softmax_block(st_, nk, bm, s.mx, s.sm, s.ot, t_.Dv);
    pv_block(t_.v + j0 * t_.Dv, t_.Dv, st_, nk, s.ot);
  }

  void finish(const Sub& s) {
    for (int64_t q = 0; q < s.rows; ++q) {
      const float inv = s.sm[q] > 0.f ? 1.f / s.sm[q] : 0.f;
      float* dst = t_.out + (s.i0 + q) * t_.Dv;
      for (int64_t d = 0; d < t_.Dv; ++d) dst[d] = s.ot[d * kQT + q] * inv;
    }
  }

  const AttentionTile& t_;
  Sub sub_[kSub];
  int64_t nsub_;
  float *st_, *mt_, *kbias_;
  bool key_only_;
};

void tile(const AttentionTile& t) {
  TileRunner r(t);
  r.run();
}

}  // namespace

const AttentionFns kAttention = {tile, kSub* kQT, kQT, false, scratch_floats};

}  // namespace segmux::cpu::avx512
