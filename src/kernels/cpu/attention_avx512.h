// The tile driver shared by the AVX-512 attention tiles (attention_avx512.cpp: f32, and
// attention_bf16_avx512.cpp: bf16 products): sub-tiles of 48 queries in the vector lanes, key blocks,
// the online-softmax statistics and the deferral / skipping of masked key blocks (see
// attention_avx512.cpp for the method). Each including file supplies the block computation (Ops).
// Include only from *_avx512.cpp files; everything here has internal linkage.
#pragma once
#include <cmath>

#include "kernels/cpu/avx512_math.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu::avx512 {
namespace {

constexpr int64_t kQT = 48;         // queries per sub-tile: 3 vectors
constexpr int64_t kSub = 8;         // sub-tiles per tile
constexpr float kDeadBias = -1e6f;  // blocks whose key bias is below this everywhere may be skipped

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// exp(x) for x <= 0 or NaN (softmax arguments): exp_ps (avx512_math.h) without its upper clamp and its
// low-part add, which change nothing there (x <= 0 is below the clamp; r + 0 differs from r only for
// r = -0, where the polynomial gives 1 either way): the same bits, two instructions fewer.
inline __m512 exp_nonpos_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-110.0f), x);  // NaN is the second operand: kept
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
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

// Softmax statistics of one block for 48 queries: the new running max from the block max bm (stored
// into mx), the max each query subtracts (msafe: 0 while its max is -inf, all keys so far masked, so
// that its probabilities and rescale factor are 0) and the rescale factor exp(old max - new max).
// to_natural: the scores' unit in natural-log units (1; ln 2 for a tile whose scores are in log2 units).
// Returns the lanes whose factor is not 1.
inline __mmask64 softmax_begin(const float* bm, float* mx, __m512* msafe, __m512* alpha, float to_natural) {
  __mmask64 rescale = 0;
  for (int v = 0; v < 3; ++v) {
    const __m512 mold = _mm512_loadu_ps(mx + 16 * v);
    const __m512 mnew = _mm512_max_ps(_mm512_loadu_ps(bm + 16 * v), mold);
    msafe[v] =
        _mm512_mask_mov_ps(mnew, _mm512_cmp_ps_mask(mnew, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), _mm512_setzero_ps());
    alpha[v] = exp_nonpos_ps(_mm512_mul_ps(_mm512_sub_ps(mold, msafe[v]), _mm512_set1_ps(to_natural)));
    rescale |= __mmask64(_mm512_cmp_ps_mask(alpha[v], _mm512_set1_ps(1.f), _CMP_NEQ_UQ)) << (16 * v);
    _mm512_storeu_ps(mx + 16 * v, mnew);
  }
  return rescale;
}

// Running sums (sm = sm * alpha + sum) and O^T [Dv][48] rescaled by alpha where some factor is not 1.
inline void softmax_end(const __m512* alpha, const __m512* sum, __mmask64 rescale, float* sm, float* ot, int64_t Dv) {
  for (int v = 0; v < 3; ++v)
    _mm512_storeu_ps(sm + 16 * v, _mm512_fmadd_ps(_mm512_loadu_ps(sm + 16 * v), alpha[v], sum[v]));
  if (rescale)
    for (int64_t d = 0; d < Dv; ++d)
      for (int v = 0; v < 3; ++v) {
        float* o = ot + d * kQT + 16 * v;
        _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_loadu_ps(o), alpha[v]));
      }
}

inline __m512 unpacklo_pd(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}
inline __m512 unpackhi_pd(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}

// r[i][j] -> r[j][i] for a 16 x 16 block held as 16 vectors.
inline void transpose16(__m512* r) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = unpacklo_pd(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = unpackhi_pd(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = unpacklo_pd(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = unpackhi_pd(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const int h = i / 4 * 8 + i % 4;
    t[h] = _mm512_shuffle_f32x4(r[h], r[h + 4], 0x88);
    t[h + 4] = _mm512_shuffle_f32x4(r[h], r[h + 4], 0xdd);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
  }
}

// Per-tile state of one sub-tile: Q^T [D][48], O^T [Dv][48], running max and sum, |q| * |scale|.
struct Sub {
  float *qt, *ot, *mx, *sm, *qn;
  int64_t i0, rows;
};

// Scratch layout (floats, 64-byte aligned pieces).
inline int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
inline int64_t sub_floats(int64_t D, int64_t Dv) { return round16(D * kQT) + round16(Dv * kQT) + 3 * kQT; }
// keys: the Ops' key block (kKeys).
inline int64_t runner_floats(int64_t D, int64_t Dv, int64_t keys) {
  return 16 + kSub * sub_floats(D, Dv) + 2 * keys * kQT + keys + kQT;
}

// Ops: the block computation, constructed from the runner after its own scratch (Ops reads its part at
// extra()) and called as ops.block(runner, sub index, key block, first key, keys); Ops::kScoreUnit: the
// unit of the scores and running maxima it keeps (1: natural log; log2 e: base 2); Ops::kKeys keys per
// block (the bf16 tile's blocks are half the bytes of the f32 one's, and twice the keys amortise the
// per-block softmax work better there, while the f32 tile is fastest at 128).
template <class Ops>
class AttentionTiles {
  static constexpr int64_t kKB = Ops::kKeys;

 public:
  explicit AttentionTiles(const AttentionTile& t) : t_(t) {
    float* p = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(t.scratch) + 63) & ~uintptr_t(63));
    nsub_ = (t.rows + kQT - 1) / kQT;
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
      load_queries(s);
      for (int64_t i = 0; i < t.Dv * kQT; ++i) s.ot[i] = 0.f;
    }
    st_ = p;
    mt_ = st_ + kKB * kQT;
    kbias_ = mt_ + kKB * kQT;
    bm_ = kbias_ + kKB;
    extra_ = bm_ + kQT;
    key_only_ = (t.fmask || t.bmask) && t.mrow == 0;
  }

  float* extra() const { return extra_; }

  void run() {
    Ops ops(*this);
    const int64_t nblocks = (t_.Lk + kKB - 1) / kKB;
    bool deferred = false;
    for (int64_t b = 0; b < nblocks; ++b) {
      if (key_only_ && key_bias(b) < kDeadBias) {
        deferred = true;
        continue;
      }
      for (int64_t g = 0; g < nsub_; ++g) block(ops, g, b);
    }
    if (deferred)
      for (int64_t b = 0; b < nblocks; ++b) {
        const float bmax = key_bias(b);
        if (!(bmax < kDeadBias)) continue;
        const float kmax = key_norm_max(b);
        for (int64_t g = 0; g < nsub_; ++g)
          if (!skippable(sub_[g], kmax, bmax)) block(ops, g, b);
      }
    for (int64_t g = 0; g < nsub_; ++g) finish(sub_[g]);
  }

  // For the Ops: the tile, its sub-tiles, the f32 score block [kKB][48], the block max [48], and the
  // bias kind (0: none, 1: per key in kbias(), 2: the tile mt()).
  const AttentionTile& t() const { return t_; }
  Sub& sub(int64_t g) { return sub_[g]; }
  float* st() const { return st_; }
  float* bm() const { return bm_; }
  int bias_kind() const { return key_only_ ? 1 : t_.fmask || t_.bmask ? 2 : 0; }
  const float* bias() const { return key_only_ ? kbias_ : mt_; }

 private:
  // Keys of block b: kbias_ = their bias; returns the largest.
  float key_bias(int64_t b) {
    const int64_t j0 = b * kKB, nk = min64(kKB, t_.Lk - j0);
    float m = -INFINITY;
    for (int64_t j = 0; j < nk; ++j) {
      const int64_t at = t_.moff + (j0 + j) * t_.mcol;
      const float x = t_.fmask ? t_.fmask[at] : t_.bmask[at] ? 0.f : -INFINITY;
      kbias_[j] = x;
      m = x > m ? x : m;
    }
    return m;
  }

  float key_norm_max(int64_t b) const {
    const int64_t j0 = b * kKB, nk = min64(kKB, t_.Lk - j0);
    float m = 0.f;
    for (int64_t j = 0; j < nk; ++j) {
      const float* k = t_.k + (j0 + j) * t_.k_row;
      float n2 = 0.f;
      for (int64_t d = 0; d < t_.D; ++d) n2 += k[d] * k[d];
      m = n2 > m || n2 != n2 ? n2 : m;  // NaN: never skippable
    }
    return std::sqrt(m);
  }

  // True when no key of a deferred block can reach 2^-200 of any query's running max (see the top).
  bool skippable(const Sub& s, float kmax, float bmax) const {
    for (int64_t q = 0; q < s.rows; ++q) {
      const float hi = s.qn[q] * kmax * 1.02f + 1.f + bmax + 200.f;  // 1.02: bf16 operands too
      if (!(hi * Ops::kScoreUnit < s.mx[q])) return false;
    }
    return true;
  }

  // Bias tile [nk][48] of a general mask (per query and key); pad queries get 0. An f32 mask with
  // contiguous keys is transposed 16 x 16 at a time (element by element it cost 25 % of the tile).
  void mask_tile(const Sub& s, int64_t j0, int64_t nk) {
    if (t_.fmask && t_.mcol == 1) {
      for (int v = 0; v < 3; ++v)
        for (int64_t jb = 0; jb < nk; jb += 16) {
          const __mmask16 km = tail_mask(nk - jb);
          __m512 r[16];
          for (int64_t q = 0; q < 16; ++q) {
            const int64_t qq = 16 * v + q;
            r[q] = qq < s.rows ? _mm512_maskz_loadu_ps(km, t_.fmask + t_.moff + (s.i0 + qq) * t_.mrow + j0 + jb)
                               : _mm512_setzero_ps();
          }
          transpose16(r);
          for (int64_t j = 0; j < min64(16, nk - jb); ++j) _mm512_storeu_ps(mt_ + (jb + j) * kQT + 16 * v, r[j]);
        }
      return;
    }
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t q = 0; q < kQT; ++q) {
        float x = 0.f;
        if (q < s.rows) {
          const int64_t at = t_.moff + (s.i0 + q) * t_.mrow + (j0 + j) * t_.mcol;
          x = t_.fmask ? t_.fmask[at] : t_.bmask[at] ? 0.f : -INFINITY;
        }
        mt_[j * kQT + q] = x;
      }
  }

  // Block b for sub-tile g: the block max and the bias the scores start from (kbias_ for a key-only
  // mask, a bias tile for a general one), then the Ops.
  void block(Ops& ops, int64_t g, int64_t b) {
    const int64_t j0 = b * kKB, nk = min64(kKB, t_.Lk - j0);
    for (int64_t q = 0; q < kQT; ++q) bm_[q] = -INFINITY;
    if (!key_only_ && (t_.fmask || t_.bmask)) mask_tile(sub_[g], j0, nk);
    ops.block(*this, g, j0, nk);
  }

  // Q^T [D][48] of the sub-tile's queries (pad queries 0), 16 queries x 16 dims at a time, and each
  // query's |q| |scale| (bounds the scaled scores: |q k| scale <= qn |k|), running max and sum.
  void load_queries(Sub& s) {
    for (int v = 0; v < 3; ++v) {
      __m512 n2 = _mm512_setzero_ps();
      for (int64_t d0 = 0; d0 < t_.D; d0 += 16) {
        const __mmask16 dm = tail_mask(t_.D - d0);
        __m512 r[16];
        for (int64_t q = 0; q < 16; ++q) {
          const int64_t qq = 16 * v + q;
          r[q] = qq < s.rows ? _mm512_maskz_loadu_ps(dm, t_.q + (s.i0 + qq) * t_.q_row + d0) : _mm512_setzero_ps();
        }
        transpose16(r);
        for (int64_t d = 0; d < min64(16, t_.D - d0); ++d) {
          _mm512_storeu_ps(s.qt + (d0 + d) * kQT + 16 * v, r[d]);
          n2 = _mm512_fmadd_ps(r[d], r[d], n2);
        }
      }
      _mm512_storeu_ps(s.qn + 16 * v, _mm512_mul_ps(_mm512_sqrt_ps(n2), _mm512_set1_ps(std::fabs(t_.scale))));
      _mm512_storeu_ps(s.mx + 16 * v, _mm512_set1_ps(-INFINITY));
      _mm512_storeu_ps(s.sm + 16 * v, _mm512_setzero_ps());
    }
  }

  // O = O^T / sum, transposed back 16 x 16 into the output rows of the sub-tile's queries.
  void finish(const Sub& s) {
    for (int v = 0; v < 3 && 16 * v < s.rows; ++v) {
      const __m512 sm = _mm512_loadu_ps(s.sm + 16 * v);
      const __m512 inv =
          _mm512_maskz_div_ps(_mm512_cmp_ps_mask(sm, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.f), sm);
      for (int64_t d0 = 0; d0 < t_.Dv; d0 += 16) {
        const int64_t nd = min64(16, t_.Dv - d0);
        __m512 r[16];
        for (int64_t d = 0; d < 16; ++d)
          r[d] = d < nd ? _mm512_mul_ps(_mm512_loadu_ps(s.ot + (d0 + d) * kQT + 16 * v), inv) : _mm512_setzero_ps();
        transpose16(r);
        for (int64_t q = 0; q < min64(16, s.rows - 16 * v); ++q)
          _mm512_mask_storeu_ps(t_.out + (s.i0 + 16 * v + q) * t_.out_row + d0, tail_mask(nd), r[q]);
      }
    }
  }

  const AttentionTile& t_;
  Sub sub_[kSub];
  int64_t nsub_;
  float *st_, *mt_, *kbias_, *bm_, *extra_;
  bool key_only_;
};

}  // namespace
}  // namespace segmux::cpu::avx512
