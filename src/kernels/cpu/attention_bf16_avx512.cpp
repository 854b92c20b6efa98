// AVX-512 BF16 tile of the flash-attention kernel, for nodes compiled in bf16 (segmux_precision =
// "bf16") on CPUs with AVX512_BF16: both products with vdpbf16ps (bf16 pairs, f32 accumulation), the
// online softmax in f32 as in the f32 tile (attention_avx512.cpp, whose layout this follows: queries in
// the lanes, AttentionTiles of attention_avx512.h). vdpbf16ps sums pairs along the reduced dimension, so
// the operands in the lanes are packed as pairs: Q^T as (dim 2p, 2p+1) per query, P^T as (key 2p, 2p+1)
// per query, and the broadcast operands K (pairs of dims, its natural layout) and V (pairs of keys,
// repacked per key block). The scale is applied to the f32 scores, as in the f32 tile, together with log2 e:
// the softmax runs in base 2 (exp2_shifted_ps). Rounding to bf16 is to nearest even; probabilities and their
// sums stay f32 apart from the rounding of P for the product.
#include "kernels/cpu/attention_avx512.h"

namespace segmux::cpu::avx512 {
namespace {

// Pairs of 32-bit words (two bf16) per row: D rounded up to even, halved.
inline int64_t pairs(int64_t n) { return (n + 1) / 2; }

// [a0..a15], [b0..b15] -> bf16 pairs (a0,b0), (a1,b1), ... as 16 32-bit words.
inline __m512i interleave_bf16(__m512 a, __m512 b) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                       5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

inline uint16_t to_bf16(float x) {  // round to nearest even; NaN stays NaN
  const uint32_t u = __builtin_bit_cast(uint32_t, x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

// 2^(s - m) for scores s and their running max m in log2 units (the tile folds log2 e into the score
// scale and the bias: one multiply per score less than exp(s - m)); s > m only by the one-pass margin.
// s - m is exact where s is near m, and 0 where a query's keys all carry the same huge finite bias (they
// round to the same score). 2^x = 2^n 2^r with n = round(x) and r = x - n (vreduceps, exact; 0 for
// x = -inf, so that no clamp is needed: scalef by -inf gives 0) and a degree-3 minimax fit of 2^r on
// |r| <= 1/2, relative error 7.5e-5: 26 times below half a bf16 unit, the rounding P takes right after
// (the sums take the same fit, so its error mostly cancels in the normalisation). With 32-dim heads the
// exp takes the products' ports for a sixth of the tile's time; this form is 7 instructions, the f32
// tile's exp_nonpos_ps 13. Only the bf16 tile uses it: the f32 tile keeps exp_nonpos_ps, whose bits the
// engines' parity tests pin.
inline __m512 exp2_shifted_ps(__m512 s, __m512 m) {
  const __m512 x = _mm512_sub_ps(s, m);
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_reduce_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(5.5171530693769455e-2f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.4261100590229034e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.932609677314758e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.999280571937561e-1f));
  return _mm512_scalef_ps(p, n);
}

inline __m512 log2_units(const float* bias) { return _mm512_mul_ps(_mm512_loadu_ps(bias), _mm512_set1_ps(kLog2e)); }

#define BX_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0;
#define BX_ROWS(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define BX_DOT(i, a_expr)                                        \
  if constexpr (R > i) {                                         \
    const __m512bh a = (__m512bh)_mm512_set1_epi32(int(a_expr)); \
    c##i##0 = _mm512_dpbf16_ps(c##i##0, a, b0);                  \
    c##i##1 = _mm512_dpbf16_ps(c##i##1, a, b1);                  \
    c##i##2 = _mm512_dpbf16_ps(c##i##2, a, b2);                  \
  }
#define BX_STORE(i, base)                           \
  if constexpr (R > i) {                            \
    _mm512_storeu_ps(base + i * kQT, c##i##0);      \
    _mm512_storeu_ps(base + i * kQT + 16, c##i##1); \
    _mm512_storeu_ps(base + i * kQT + 32, c##i##2); \
  }
#define BX_LOAD(i, base)                            \
  if constexpr (R > i) {                            \
    c##i##0 = _mm512_loadu_ps(base + i * kQT);      \
    c##i##1 = _mm512_loadu_ps(base + i * kQT + 16); \
    c##i##2 = _mm512_loadu_ps(base + i * kQT + 32); \
  }

// Where qk_rows puts a block's scores: st (f32 S^T rows, the two-pass path), or, with EXP, straight on as
// probabilities exp(s - m) against the running max m of the earlier blocks (48 lanes at m), packed as
// bf16 key pairs at pt, their sums added to psum (48 lanes each).
struct ScoreSink {
  float* st;
  float* bm;
  const float* m;
  float* psum;
  uint32_t* pt;
};

// S^T rows [R keys][48] = (K[R, dims] Q^T * scale + bias) log2 e: K as bf16 pairs, kp words per key; Q^T pairs
// [kp][48]; the block max of each query folded into out.bm.
template <int R, int INIT, bool EXP>
inline void qk_rows(const uint32_t* K, int64_t kp, const uint32_t* qt, float scale, const float* bias,
                    const ScoreSink& out) {
  float* const st = out.st;
  float* const bm = out.bm;
  BX_ROWS(BX_DECL)
  for (int64_t p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(qt + p * kQT),
                   b1 = (__m512bh)_mm512_loadu_si512(qt + p * kQT + 16),
                   b2 = (__m512bh)_mm512_loadu_si512(qt + p * kQT + 32);
#define BX_QK(i) BX_DOT(i, K[i * kp + p])
    BX_ROWS(BX_QK)
#undef BX_QK
  }
  const __m512 vs = _mm512_set1_ps(scale * kLog2e);
// Scale and bias as one explicit FMA: the compiler would contract a multiply and an add at -O2 and up
// but not at -O1, and the sanitizer build must compute what the release build does.
#define BX_SCALE(i)                                                            \
  if constexpr (R > i) {                                                       \
    if constexpr (INIT == 1) {                                                 \
      const __m512 b = _mm512_set1_ps(bias[i] * kLog2e);                       \
      c##i##0 = _mm512_fmadd_ps(c##i##0, vs, b);                               \
      c##i##1 = _mm512_fmadd_ps(c##i##1, vs, b);                               \
      c##i##2 = _mm512_fmadd_ps(c##i##2, vs, b);                               \
    } else if constexpr (INIT == 2) {                                          \
      c##i##0 = _mm512_fmadd_ps(c##i##0, vs, log2_units(bias + i * kQT));      \
      c##i##1 = _mm512_fmadd_ps(c##i##1, vs, log2_units(bias + i * kQT + 16)); \
      c##i##2 = _mm512_fmadd_ps(c##i##2, vs, log2_units(bias + i * kQT + 32)); \
    } else {                                                                   \
      c##i##0 = _mm512_mul_ps(c##i##0, vs);                                    \
      c##i##1 = _mm512_mul_ps(c##i##1, vs);                                    \
      c##i##2 = _mm512_mul_ps(c##i##2, vs);                                    \
    }                                                                          \
  }
  BX_ROWS(BX_SCALE)
#undef BX_SCALE
  if constexpr (EXP) {
    __m512 m0 = c00, m1 = c01, m2 = c02;  // the block max, keeping the scores
#define BX_FMAX(i)                   \
  if constexpr (i > 0 && R > i) {    \
    m0 = _mm512_max_ps(m0, c##i##0); \
    m1 = _mm512_max_ps(m1, c##i##1); \
    m2 = _mm512_max_ps(m2, c##i##2); \
  }
    BX_ROWS(BX_FMAX)
#undef BX_FMAX
    _mm512_storeu_ps(bm, _mm512_max_ps(_mm512_loadu_ps(bm), m0));
    _mm512_storeu_ps(bm + 16, _mm512_max_ps(_mm512_loadu_ps(bm + 16), m1));
    _mm512_storeu_ps(bm + 32, _mm512_max_ps(_mm512_loadu_ps(bm + 32), m2));
    const __m512 l0 = _mm512_loadu_ps(out.m), l1 = _mm512_loadu_ps(out.m + 16), l2 = _mm512_loadu_ps(out.m + 32);
    __m512 s0 = _mm512_loadu_ps(out.psum), s1 = _mm512_loadu_ps(out.psum + 16), s2 = _mm512_loadu_ps(out.psum + 32);
    // Keys i, j = i + 1 as one bf16 pair per query (a zero key pads an odd R), summed as softmax_block does.
#define BX_EXPV(i, j, v, l, sum)                                                 \
  {                                                                              \
    const __m512 a = exp2_shifted_ps(c##i##v, l);                                \
    const __m512 b = R > j ? exp2_shifted_ps(c##j##v, l) : _mm512_setzero_ps();  \
    sum = _mm512_add_ps(sum, _mm512_add_ps(a, b));                               \
    _mm512_storeu_si512(out.pt + (i / 2) * kQT + 16 * v, interleave_bf16(a, b)); \
  }
#define BX_EXP2(i, j)                                                          \
  if constexpr (R > i) {                                                       \
    BX_EXPV(i, j, 0, l0, s0) BX_EXPV(i, j, 1, l1, s1) BX_EXPV(i, j, 2, l2, s2) \
  }
    BX_EXP2(0, 1)
    BX_EXP2(2, 3)
    BX_EXP2(4, 5)
    BX_EXP2(6, 7)
#undef BX_EXP2
#undef BX_EXPV
    _mm512_storeu_ps(out.psum, s0);
    _mm512_storeu_ps(out.psum + 16, s1);
    _mm512_storeu_ps(out.psum + 32, s2);
    return;
  }
#define BX_QSTORE(i) BX_STORE(i, st)
  BX_ROWS(BX_QSTORE)
#undef BX_QSTORE
#define BX_MAX(i, j)                           \
  if constexpr (R > j) {                       \
    c##i##0 = _mm512_max_ps(c##i##0, c##j##0); \
    c##i##1 = _mm512_max_ps(c##i##1, c##j##1); \
    c##i##2 = _mm512_max_ps(c##i##2, c##j##2); \
  }
  // clang-format off
  BX_MAX(0, 4) BX_MAX(1, 5) BX_MAX(2, 6) BX_MAX(3, 7) BX_MAX(0, 2) BX_MAX(1, 3) BX_MAX(0, 1)
#undef BX_MAX
  _mm512_storeu_ps(bm, _mm512_max_ps(_mm512_loadu_ps(bm), c00));
  _mm512_storeu_ps(bm + 16, _mm512_max_ps(_mm512_loadu_ps(bm + 16), c01));
  _mm512_storeu_ps(bm + 32, _mm512_max_ps(_mm512_loadu_ps(bm + 32), c02));
  // clang-format on
}

// O^T rows [R dims][48] += V^T P^T: V as key pairs [np][Dv] words (starting at the first dim), P^T pairs
// [np][48].
template <int R>
inline void pv_rows(const uint32_t* V, int64_t Dv, const uint32_t* pt, int64_t np, float* ot) {
  BX_ROWS(BX_DECL)
#define BX_PLOAD(i) BX_LOAD(i, ot)
  BX_ROWS(BX_PLOAD)
#undef BX_PLOAD
  for (int64_t p = 0; p < np; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(pt + p * kQT),
                   b1 = (__m512bh)_mm512_loadu_si512(pt + p * kQT + 16),
                   b2 = (__m512bh)_mm512_loadu_si512(pt + p * kQT + 32);
#define BX_PV(i) BX_DOT(i, V[p * Dv + i])
    BX_ROWS(BX_PV)
#undef BX_PV
  }
#define BX_PSTORE(i) BX_STORE(i, ot)
  BX_ROWS(BX_PSTORE)
#undef BX_PSTORE
}
#undef BX_DECL
#undef BX_ROWS
#undef BX_DOT
#undef BX_STORE
#undef BX_LOAD

template <int INIT, bool EXP>
void qk_block(const uint32_t* K, int64_t kp, const uint32_t* qt, float scale, const float* bias, int64_t nk,
              const ScoreSink& out) {
  using Fn = void (*)(const uint32_t*, int64_t, const uint32_t*, float, const float*, const ScoreSink&);
  static constexpr Fn tails[8] = {nullptr,
                                  qk_rows<1, INIT, EXP>,
                                  qk_rows<2, INIT, EXP>,
                                  qk_rows<3, INIT, EXP>,
                                  qk_rows<4, INIT, EXP>,
                                  qk_rows<5, INIT, EXP>,
                                  qk_rows<6, INIT, EXP>,
                                  qk_rows<7, INIT, EXP>};
  const int64_t bstep = INIT == 2 ? kQT : INIT == 1 ? 1 : 0;
  for (int64_t j = 0; j < nk; j += 8) {
    ScoreSink o = out;  // rows of keys j..: st rows, P^T pairs
    o.st = out.st ? out.st + j * kQT : nullptr;
    o.pt = out.pt ? out.pt + (j / 2) * kQT : nullptr;
    if (j + 8 <= nk)
      qk_rows<8, INIT, EXP>(K + j * kp, kp, qt, scale, bias + j * bstep, o);
    else
      tails[nk - j](K + j * kp, kp, qt, scale, bias + j * bstep, o);
  }
}

void pv_block(const uint32_t* V, int64_t Dv, const uint32_t* pt, int64_t np, float* ot) {
  using Fn = void (*)(const uint32_t*, int64_t, const uint32_t*, int64_t, float*);
  static constexpr Fn tails[8] = {nullptr,    pv_rows<1>, pv_rows<2>, pv_rows<3>,
                                  pv_rows<4>, pv_rows<5>, pv_rows<6>, pv_rows<7>};
  int64_t d = 0;
  for (; d + 8 <= Dv; d += 8) pv_rows<8>(V + d, Dv, pt, np, ot + d * kQT);
  if (d < Dv) tails[Dv - d](V + d, Dv, pt, np, ot + d * kQT);
}

// Exp pass: st[nk][48] -> probabilities, packed as bf16 key pairs pt[pairs(nk)][48] (a zero key pads an
// odd count); the sums take the f32 probabilities.
void softmax_block(const float* st, int64_t nk, const float* bm, float* mx, float* sm, float* ot, int64_t Dv,
                   uint32_t* pt) {
  __m512 msafe[3], alpha[3], sum[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  const __mmask64 rescale = softmax_begin(bm, mx, msafe, alpha, kLn2);
  for (int64_t j = 0; j < nk; j += 2) {
    const float* s = st + j * kQT;
    const bool two = j + 1 < nk;
    for (int v = 0; v < 3; ++v) {
      const __m512 p0 = exp2_shifted_ps(_mm512_loadu_ps(s + 16 * v), msafe[v]);
      const __m512 p1 = two ? exp2_shifted_ps(_mm512_loadu_ps(s + kQT + 16 * v), msafe[v]) : _mm512_setzero_ps();
      sum[v] = _mm512_add_ps(sum[v], _mm512_add_ps(p0, p1));
      _mm512_storeu_si512(pt + (j / 2) * kQT + 16 * v, interleave_bf16(p0, p1));
    }
  }
  softmax_end(alpha, sum, rescale, sm, ot, Dv);
}

struct Bf16Ops {
  static constexpr float kScoreUnit = kLog2e;  // scores in log2 units (exp2_shifted_ps)
  static constexpr int64_t kKeys = 256;        // keys per block (AttentionTiles)

  template <class Runner>
  explicit Bf16Ops(Runner& r) {
    const AttentionTile& t = r.t();
    D = t.D;
    Dv = t.Dv;
    kp = pairs(D);
    uint32_t* p = reinterpret_cast<uint32_t*>(r.extra());
    for (int64_t g = 0; g < kSub; ++g, p += round16(kp * kQT)) qt[g] = p;
    kb = p;
    vb = kb + round16(kKeys * kp);
    pb = vb + round16(pairs(kKeys) * Dv);
    for (int64_t g = 0; g < kSub && g * kQT < t.rows; ++g) pack_q(r.sub(g).qt, qt[g]);
  }

  // Q^T [D][48] f32 -> pairs of dims [kp][48].
  void pack_q(const float* q, uint32_t* dst) const {
    for (int64_t p = 0; p < kp; ++p)
      for (int v = 0; v < 3; ++v) {
        const __m512 a = _mm512_loadu_ps(q + 2 * p * kQT + 16 * v);
        const __m512 b = 2 * p + 1 < D ? _mm512_loadu_ps(q + (2 * p + 1) * kQT + 16 * v) : _mm512_setzero_ps();
        _mm512_storeu_si512(dst + p * kQT + 16 * v, interleave_bf16(a, b));
      }
  }

  // The key block at j0 in bf16: K rows as dim pairs [nk][kp], V as key pairs [pairs(nk)][Dv].
  void pack_kv(const AttentionTile& t, int64_t j0, int64_t nk) {
    uint16_t* k16 = reinterpret_cast<uint16_t*>(kb);
    for (int64_t j = 0; j < nk; ++j) {
      const float* src = t.k + (j0 + j) * t.k_row;
      uint16_t* dst = k16 + j * 2 * kp;
      int64_t d = 0;
      for (; d + 32 <= D; d += 32)
        _mm512_storeu_si512(dst + d,
                            (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + d + 16), _mm512_loadu_ps(src + d)));
      for (; d < 2 * kp; ++d) dst[d] = d < D ? to_bf16(src[d]) : 0;
    }
    for (int64_t j = 0; j < nk; j += 2) {
      const float* r0 = t.v + (j0 + j) * t.v_row;
      const float* r1 = r0 + t.v_row;
      const bool two = j + 1 < nk;
      uint32_t* dst = vb + (j / 2) * Dv;
      for (int64_t d = 0; d < Dv; d += 16) {
        const __mmask16 m = tail_mask(Dv - d);
        const __m512 a = _mm512_maskz_loadu_ps(m, r0 + d);
        const __m512 b = two ? _mm512_maskz_loadu_ps(m, r1 + d) : _mm512_setzero_ps();
        _mm512_mask_storeu_epi32(dst + d, m, interleave_bf16(a, b));
      }
    }
  }

  template <class Runner>
  void block(Runner& r, int64_t g, int64_t j0, int64_t nk) {
    const AttentionTile& t = r.t();
    Sub& s = r.sub(g);
    if (packed != j0) {
      pack_kv(t, j0, nk);
      packed = j0;
    }
    if (!probabilities_in_one_pass(r, g, nk)) {
      scores<false>(r, g, nk, ScoreSink{r.st(), r.bm(), nullptr, nullptr, nullptr});
      softmax_block(r.st(), nk, r.bm(), s.mx, s.sm, s.ot, Dv, pb);
    }
    pv_block(vb, Dv, pb, pairs(nk), s.ot);
  }

  template <bool EXP, class Runner>
  void scores(Runner& r, int64_t g, int64_t nk, const ScoreSink& out) {
    const AttentionTile& t = r.t();
    switch (r.bias_kind()) {
      case 1:
        return qk_block<1, EXP>(kb, kp, qt[g], t.scale, r.bias(), nk, out);
      case 2:
        return qk_block<2, EXP>(kb, kp, qt[g], t.scale, r.bias(), nk, out);
      default:
        return qk_block<0, EXP>(kb, kp, qt[g], t.scale, nullptr, nk, out);
    }
  }

  // After the first block of a sub-tile, the exp runs on the scores while they are in registers, against
  // the running max m of the earlier blocks instead of this block's: the probabilities and the sum are
  // then those of the reference m (2^(s - m) up to 2^kMargin), and the output is unchanged up to
  // rounding, as the softmax normalises by the same sum. This saves the store and reload of the f32
  // scores and lets the exp overlap the products (bench_attention, bf16 tile: 2-8 % less time). The
  // block is accepted when no query's block max exceeds its m by more than kMargin (sums and O^T then
  // stay far from the f32 range: |v| * keys * 2^28); otherwise it is redone in two passes, which raise
  // m. A sub-tile with a query that has no finite m yet (its first block, or all its keys so far masked)
  // goes to the two passes directly.
  template <class Runner>
  bool probabilities_in_one_pass(Runner& r, int64_t g, int64_t nk) {
    static constexpr float kMargin = 28.f;  // 2^28, about e^19.4
    Sub& s = r.sub(g);
    for (int v = 0; v < 3; ++v) {
      const __m512 m = _mm512_loadu_ps(s.mx + 16 * v);
      if (_mm512_cmp_ps_mask(_mm512_abs_ps(m), _mm512_set1_ps(INFINITY), _CMP_LT_OQ) != 0xffff) return false;
      _mm512_storeu_ps(psum + 16 * v, _mm512_setzero_ps());
    }
    scores<true>(r, g, nk, ScoreSink{nullptr, r.bm(), s.mx, psum, pb});
    for (int v = 0; v < 3; ++v) {
      const __m512 limit = _mm512_add_ps(_mm512_loadu_ps(s.mx + 16 * v), _mm512_set1_ps(kMargin));
      if (_mm512_cmp_ps_mask(_mm512_loadu_ps(r.bm() + 16 * v), limit, _CMP_GT_OQ)) return false;
    }
    for (int v = 0; v < 3; ++v)
      _mm512_storeu_ps(s.sm + 16 * v, _mm512_add_ps(_mm512_loadu_ps(s.sm + 16 * v), _mm512_loadu_ps(psum + 16 * v)));
    return true;
  }

  alignas(64) float psum[kQT];
  int64_t D = 0, Dv = 0, kp = 0, packed = -1;
  uint32_t *qt[kSub] = {}, *kb = nullptr, *vb = nullptr, *pb = nullptr;
};

int64_t scratch_floats(int64_t D, int64_t Dv) {
  const int64_t kp = pairs(D);
  const int64_t kb = Bf16Ops::kKeys;
  return runner_floats(D, Dv, kb) + kSub * round16(kp * kQT) + round16(kb * kp) + round16(pairs(kb) * Dv) +
         pairs(kb) * kQT;
}

void tile(const AttentionTile& t) {
  AttentionTiles<Bf16Ops> r(t);
  r.run();
}

}  // namespace

const AttentionFns kAttentionBf16 = {tile, kSub* kQT, kQT, false, scratch_floats};

}  // namespace segmux::cpu::avx512
