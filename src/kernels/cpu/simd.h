// The inner loops of our optimized CPU kernels, one table per instruction-set level. The kernels
// (eltwise.cpp, norms.cpp, attention.cpp, rope.cpp: baseline code) keep shapes, threading and
// buffers, and call these plain-pointer functions through the table active_isa() picks at kernel
// creation. Implementations: *_avx512.cpp (intrinsics), and *_portable.h compiled twice, by
// *_generic.cpp (baseline) and *_avx2.cpp (-mavx2 -mfma). Each lives in namespace
// segmux::cpu::<level>, so no inline or template function compiled with wider instructions can stand
// in for a baseline one at link time (scripts/check_isa_objects.sh checks the objects).
// Internal to src/kernels/cpu; no intrinsics here.
#pragma once
#include <cstdint>

#include "kernels/isa.h"

namespace segmux::cpu {

// out[i] = a[i*sa] op b[i*sb] for i < n, sa and sb each 0 or 1.
using BinaryInnerFn = void (*)(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n);

struct EltwiseFns {
  BinaryInnerFn add, sub, mul, div;
  void (*gelu)(const float* x, float* y, int64_t n);  // exact GELU (erf), y may not alias x partially
  // Sigmoid, the reference's result exactly: computed in double as the reference does (1 / (1 + e^-x),
  // e^x / (1 + e^x) below 0), lanes whose float rounding the approximation could change recomputed
  // with libm's exp.
  void (*sigmoid)(const float* x, float* y, int64_t n);
};

struct NormFns {
  // Softmax over each of `rows` contiguous rows of `len`.
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t len);
  // Softmax over a strided axis: for each of ncols (<= 16) adjacent columns, len values at stride inner.
  void (*softmax_columns)(const float* x, float* y, int64_t len, int64_t inner, int64_t ncols);
  // LayerNorm of `rows` rows of n; scale has n values, bias may be null; mean/rstd (may be null) get
  // one value per row.
  void (*layer_norm_rows)(const float* x, float* y, int64_t rows, int64_t n, float eps, const float* scale,
                          const float* bias, float* mean, float* rstd);
  // GroupNorm of groups [begin, end) of an [N, C, spatial] tensor in `groups` groups of cg channels.
  void (*group_norm)(const float* x, float* y, int64_t begin, int64_t end, int64_t groups, int64_t cg, int64_t spatial,
                     float eps, const float* scale, const float* bias);
};

struct RopeFns {
  // Rows [begin, end) of D values, x's row r at x + r * x_row (y's at y + r * D); row r uses table row
  // r % L of cos2/sin2 ([L, D], pair-expanded).
  void (*rows)(const float* x, int64_t x_row, const float* cos2, const float* sin2, float* y, int64_t begin,
               int64_t end, int64_t L, int64_t D);
};

constexpr int64_t kAttentionQueryBlock = 96;  // rows of a portable tile
constexpr int64_t kAttentionKeyBlock = 256;   // keys of a portable tile's score block

// One (batch-head, query block) work item of flash attention; see attention.cpp.
struct AttentionTile {
  const float* q;   // [rows, D], row stride q_row
  const float* k;   // K of this batch-head: [Lk, D], row stride k_row
  const float* kt;  // K^T of this batch-head, [D, Lk], when AttentionFns::wants_kt (else null)
  const float* v;   // [Lk, Dv], row stride v_row
  float* out;       // [rows, Dv], row stride out_row
  int64_t q_row, k_row, v_row, out_row;
  int64_t rows, D, Lk, Dv;
  float scale;
  const float* fmask;        // additive mask or null
  const bool* bmask;         // boolean mask (true = attend) or null
  int64_t moff, mrow, mcol;  // mask offset of (row 0, key 0) and its row / key strides
  float* scratch;            // AttentionFns::scratch_floats(D, Dv) floats, this thread's
};

struct AttentionFns {
  void (*tile)(const AttentionTile& t);
  int64_t query_block;    // most rows per tile
  int64_t query_granule;  // tiles of fewer rows (more work items for few queries) are a multiple of this
  bool wants_kt;          // the driver passes K^T
  int64_t (*scratch_floats)(int64_t D, int64_t Dv);
};

#define SEGMUX_DECLARE_SIMD_TABLES(level) \
  namespace level {                       \
  extern const EltwiseFns kEltwise;       \
  extern const NormFns kNorms;            \
  extern const RopeFns kRope;             \
  extern const AttentionFns kAttention;   \
  }
SEGMUX_DECLARE_SIMD_TABLES(generic)
SEGMUX_DECLARE_SIMD_TABLES(avx2)
SEGMUX_DECLARE_SIMD_TABLES(avx512)
#undef SEGMUX_DECLARE_SIMD_TABLES
namespace avx512 {
extern const AttentionFns kAttentionBf16;  // bf16 products (AVX512_BF16)
}

// The tables for `isa` (default: active_isa()).
const EltwiseFns& eltwise_fns(Isa isa = active_isa());
const NormFns& norm_fns(Isa isa = active_isa());
const RopeFns& rope_fns(Isa isa = active_isa());
const AttentionFns& attention_fns(Isa isa = active_isa());
// The bf16 attention tile at `isa`, or null where the level or the CPU has none (AVX512_BF16 needed).
const AttentionFns* attention_bf16_fns(Isa isa = active_isa());

}  // namespace segmux::cpu
