// Picks the loop tables of an instruction-set level (simd.h).
#include "kernels/cpu/simd.h"

namespace segmux::cpu {

namespace {
template <typename T>
const T& pick(Isa isa, const T& generic_fns, const T& avx2_fns, const T& avx512_fns) {
  switch (isa) {
    case Isa::avx512:
      return avx512_fns;
    case Isa::avx2:
      return avx2_fns;
    default:
      return generic_fns;
  }
}
}  // namespace

const EltwiseFns& eltwise_fns(Isa isa) { return pick(isa, generic::kEltwise, avx2::kEltwise, avx512::kEltwise); }
const NormFns& norm_fns(Isa isa) { return pick(isa, generic::kNorms, avx2::kNorms, avx512::kNorms); }
const RopeFns& rope_fns(Isa isa) { return pick(isa, generic::kRope, avx2::kRope, avx512::kRope); }
const AttentionFns& attention_fns(Isa isa) {
  return pick(isa, generic::kAttention, avx2::kAttention, avx512::kAttention);
}
const AttentionFns* attention_bf16_fns(Isa isa) {
  return isa == Isa::avx512 && __builtin_cpu_supports("avx512bf16") ? &avx512::kAttentionBf16 : nullptr;
}

}  // namespace segmux::cpu
