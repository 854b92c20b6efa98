// AVX-512 tile of the flash-attention kernel (attention.cpp), queries in the vector lanes.
//
// A tile is up to kSub sub-tiles of kQT = 48 queries (3 vectors). Scores are computed transposed,
// S^T[key][query] = K Q^T: the micro-kernel broadcasts K elements (K read as it is, [Lk, D], so no
// transpose per call) against Q^T held per sub-tile, and P V is computed as O^T[d][query] += V[key][d]
// P^T[key][query] (V read as it is). With queries in lanes the online softmax needs no horizontal
// reduction: the running max, the sum and the rescale factor of 48 queries are 3 vectors, and the
// block max is taken on the accumulators before they are stored. The scores are rounded as the ONNX
// graph computes them (q k, times the scale, plus the mask, each rounded; exp as exp_ps): an exp2
// variant with the scale folded into Q was 5 % faster, but flipped a mask pixel between our engine and
// ONNX Runtime on the fixture video (tests/video_parity/test_track_engines.cpp wants equal masks).
//
// Key blocks are the outer loop and the sub-tiles the inner one, so a block of K and V is read from
// memory once per tile (kSub * 48 queries), not once per 48 queries.
//
// Masked key blocks: with a key-only mask (broadcast over queries, e.g. the decoder's -1e30 bias on
// empty memory slots), a block whose every key bias is below kDeadBias is deferred until the other
// blocks are done, then skipped for a sub-tile when a Cauchy-Schwarz bound (|q| max|k| + the block's
// largest bias) shows that no score of it comes within 200 of each query's running max: exp then
// gives exactly 0 for every key of the block and the max does not change, so skipping gives
// the same result as computing it. A query whose keys are all masked by a finite bias (a uniform
// average in the reference) fails the bound and computes every block.
#include "kernels/cpu/attention_avx512.h"

namespace segmux::cpu::avx512 {
namespace {

// Accumulators of the R x 3 micro-kernels are named variables (GCC keeps an array of __m512 in memory
// and stores it on every step). 24 accumulators + 3 B vectors + 1 broadcast fit the 32 registers.
#define AX_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0;
#define AX_ROWS(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)

// S^T rows [R keys][48 queries] = K[R, D] Q^T[D, 48] * scale + bias; stores them at st (row stride kQT) and
// folds them into the block max bm[48]. The block max stays in memory: 3 more live registers make GCC
// spill the B vectors of the inner loop. INIT 0: no bias; 1: one bias per key (bias[i]); 2: a bias
// tile (bias + i * kQT, 48 values per key).
template <int R, int INIT>
inline void qk_rows(const float* K, int64_t ldk, int64_t D, const float* qt, float scale, const float* bias, float* st,
                    float* bm) {
  AX_ROWS(AX_DECL)
  for (int64_t d = 0; d < D; ++d) {
    const __m512 b0 = _mm512_loadu_ps(qt + d * kQT), b1 = _mm512_loadu_ps(qt + d * kQT + 16),
                 b2 = _mm512_loadu_ps(qt + d * kQT + 32);
#define QK_FMA(i)                                    \
  if constexpr (R > i) {                             \
    const __m512 a = _mm512_set1_ps(K[i * ldk + d]); \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);       \
    c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);       \
    c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2);       \
  }
    AX_ROWS(QK_FMA)
#undef QK_FMA
  }
  const __m512 vs = _mm512_set1_ps(scale);
#define QK_STORE(i)                                                           \
  if constexpr (R > i) {                                                      \
    c##i##0 = _mm512_mul_ps(c##i##0, vs);                                     \
    c##i##1 = _mm512_mul_ps(c##i##1, vs);                                     \
    c##i##2 = _mm512_mul_ps(c##i##2, vs);                                     \
    if constexpr (INIT == 1) {                                                \
      const __m512 b = _mm512_set1_ps(bias[i]);                               \
      c##i##0 = _mm512_add_ps(c##i##0, b);                                    \
      c##i##1 = _mm512_add_ps(c##i##1, b);                                    \
      c##i##2 = _mm512_add_ps(c##i##2, b);                                    \
    } else if constexpr (INIT == 2) {                                         \
      c##i##0 = _mm512_add_ps(c##i##0, _mm512_loadu_ps(bias + i * kQT));      \
      c##i##1 = _mm512_add_ps(c##i##1, _mm512_loadu_ps(bias + i * kQT + 16)); \
      c##i##2 = _mm512_add_ps(c##i##2, _mm512_loadu_ps(bias + i * kQT + 32)); \
    }                                                                         \
    _mm512_storeu_ps(st + i * kQT, c##i##0);                                  \
    _mm512_storeu_ps(st + i * kQT + 16, c##i##1);                             \
    _mm512_storeu_ps(st + i * kQT + 32, c##i##2);                             \
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
  // clang-format off
  QK_MAX(0, 4) QK_MAX(1, 5) QK_MAX(2, 6) QK_MAX(3, 7) QK_MAX(0, 2) QK_MAX(1, 3) QK_MAX(0, 1)
#undef QK_MAX
  _mm512_storeu_ps(bm, _mm512_max_ps(_mm512_loadu_ps(bm), c00));
  _mm512_storeu_ps(bm + 16, _mm512_max_ps(_mm512_loadu_ps(bm + 16), c01));
  _mm512_storeu_ps(bm + 32, _mm512_max_ps(_mm512_loadu_ps(bm + 32), c02));
  // clang-format on
}

// O^T rows [R dims][48 queries] += V[nk, R]^T P^T[nk, 48]; V points at (key 0, first dim), row stride ldv.
template <int R>
inline void pv_rows(const float* V, int64_t ldv, const float* pt, int64_t nk, float* ot) {
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
#define PV_FMA(i)                                    \
  if constexpr (R > i) {                             \
    const __m512 a = _mm512_set1_ps(V[j * ldv + i]); \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);       \
    c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);       \
    c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2);       \
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
void qk_block(const float* K, int64_t ldk, int64_t D, const float* qt, float scale, const float* bias, float* st,
              int64_t nk, float* bm) {
  const int64_t bstep = INIT == 2 ? kQT : INIT == 1 ? 1 : 0;
  int64_t j = 0;
  for (; j + 8 <= nk; j += 8) qk_rows<8, INIT>(K + j * ldk, ldk, D, qt, scale, bias + j * bstep, st + j * kQT, bm);
  const float* kj = K + j * ldk;
  const float* bj = bias + j * bstep;
  float* sj = st + j * kQT;
  switch (nk - j) {
    case 7:
      qk_rows<7, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    case 6:
      qk_rows<6, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    case 5:
      qk_rows<5, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    case 4:
      qk_rows<4, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    case 3:
      qk_rows<3, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    case 2:
      qk_rows<2, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    case 1:
      qk_rows<1, INIT>(kj, ldk, D, qt, scale, bj, sj, bm);
      break;
    default:
      break;
  }
}

void pv_block(const float* V, int64_t ldv, int64_t Dv, const float* pt, int64_t nk, float* ot) {
  int64_t d = 0;
  for (; d + 8 <= Dv; d += 8) pv_rows<8>(V + d, ldv, pt, nk, ot + d * kQT);
  switch (Dv - d) {
    case 7:
      pv_rows<7>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    case 6:
      pv_rows<6>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    case 5:
      pv_rows<5>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    case 4:
      pv_rows<4>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    case 3:
      pv_rows<3>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    case 2:
      pv_rows<2>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    case 1:
      pv_rows<1>(V + d, ldv, pt, nk, ot + d * kQT);
      break;
    default:
      break;
  }
}

// Exp pass of one block: st[nk][48] -> exp(s - max) in place, with the running statistics.
void softmax_block(float* st, int64_t nk, const float* bm, float* mx, float* sm, float* ot, int64_t Dv) {
  __m512 msafe[3], alpha[3], sum[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  const __mmask64 rescale = softmax_begin(bm, mx, msafe, alpha, 1.f);
  for (int64_t j = 0; j < nk; ++j) {
    float* s = st + j * kQT;
    const __m512 p0 = exp_nonpos_ps(_mm512_sub_ps(_mm512_loadu_ps(s), msafe[0]));
    const __m512 p1 = exp_nonpos_ps(_mm512_sub_ps(_mm512_loadu_ps(s + 16), msafe[1]));
    const __m512 p2 = exp_nonpos_ps(_mm512_sub_ps(_mm512_loadu_ps(s + 32), msafe[2]));
    _mm512_storeu_ps(s, p0);
    _mm512_storeu_ps(s + 16, p1);
    _mm512_storeu_ps(s + 32, p2);
    sum[0] = _mm512_add_ps(sum[0], p0);
    sum[1] = _mm512_add_ps(sum[1], p1);
    sum[2] = _mm512_add_ps(sum[2], p2);
  }
  softmax_end(alpha, sum, rescale, sm, ot, Dv);
}

struct F32Ops {
  static constexpr float kScoreUnit = 1.f;
  static constexpr int64_t kKeys = 128;

  template <class Runner>
  explicit F32Ops(Runner&) {}

  template <class Runner>
  void block(Runner& r, int64_t g, int64_t j0, int64_t nk) {
    const AttentionTile& t = r.t();
    Sub& s = r.sub(g);
    const float* K = t.k + j0 * t.k_row;
    switch (r.bias_kind()) {
      case 1:
        qk_block<1>(K, t.k_row, t.D, s.qt, t.scale, r.bias(), r.st(), nk, r.bm());
        break;
      case 2:
        qk_block<2>(K, t.k_row, t.D, s.qt, t.scale, r.bias(), r.st(), nk, r.bm());
        break;
      default:
        qk_block<0>(K, t.k_row, t.D, s.qt, t.scale, nullptr, r.st(), nk, r.bm());
        break;
    }
    softmax_block(r.st(), nk, r.bm(), s.mx, s.sm, s.ot, t.Dv);
    pv_block(t.v + j0 * t.v_row, t.v_row, t.Dv, r.st(), nk, s.ot);
  }
};

int64_t scratch_floats(int64_t D, int64_t Dv) { return runner_floats(D, Dv, F32Ops::kKeys); }

void tile(const AttentionTile& t) {
  AttentionTiles<F32Ops> r(t);
  r.run();
}

}  // namespace

const AttentionFns kAttention = {tile, kSub* kQT, kQT, false, scratch_floats};

}  // namespace segmux::cpu::avx512
