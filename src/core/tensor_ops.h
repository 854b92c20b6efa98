// Small whole-tensor operations outside graphs (any dtype unless said): slicing along an axis, axis
// permutation, dtype normalisation. Used by the tracker glue, the backends and verification.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace segmux {

// The tensor itself when it is f32, else an f32 copy (weights and fixtures may be stored in bf16).
Tensor as_f32(const Tensor& t);
// f32 values rounded to bf16 precision (what a bf16 input of a compiled graph sees), as f32.
Tensor round_to_bf16(const Tensor& t);
// Copy of `count` entries starting at `start` along `axis`.
Tensor take(const Tensor& t, int axis, int64_t start, int64_t count);
// Entries `indices` along `axis`, in that order.
Tensor take_indices(const Tensor& t, int axis, const std::vector<int64_t>& indices);
// Copy with axes permuted: out.shape[i] = t.shape[perm[i]].
Tensor permute(const Tensor& t, const std::vector<int>& perm);

}  // namespace segmux
