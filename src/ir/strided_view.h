// Strided input views and permuted outputs of fused ops (semantic attributes, honoured by every
// kernel of the ops that accept them: segmux Attention's q, k, v and its output, segmux Rope's x).
//
// A view lets a node read its logical operand straight out of a larger tensor instead of out of a
// copy made by Transpose / Split / Reshape nodes: logical element (i_0, ..., i_{r-1}) is element
//   offset + sum_d i_d * strides[d]
// of the input tensor in row-major order. Attribute "input<i>_shape" holds the logical shape and
// "input<i>_view" the offset followed by the strides. The innermost stride is 1 (kernels read rows).
// A permuted output ("output_perm") means the node writes Transpose(logical output, perm) with the
// innermost dim kept innermost. The compiler pass attention-views (compiler/passes/fuse_views.cpp)
// writes them; the ViT's q / k / v split and head merge then move no bytes.
#pragma once
#include <optional>
#include <string>

#include "ir/graph.h"

namespace segmux::ir {

inline constexpr const char* kOutputPerm = "output_perm";

struct StridedView {
  int64_t offset = 0;
  Shape shape;                   // the logical operand's shape
  std::vector<int64_t> strides;  // one per logical dim, in elements of the input tensor
};

std::string input_view_attr(int input);   // "input<i>_view": offset, strides...
std::string input_shape_attr(int input);  // "input<i>_shape": the logical shape

// The view of input `input`, or nullopt when the node reads that input as it is. Throws (naming the
// node) when only one of the two attributes is there or their ranks differ.
std::optional<StridedView> input_view(const Node& node, int input);
void set_input_view(Node& node, int input, const StridedView& view);
// The shape the node reads input `input` as: its view's, or `own` (the input's shape).
Shape read_shape(const Node& node, int input, const Shape& own);

// Empty when the view reads only elements [0, numel) of its input and its innermost stride is 1
// (or the view is empty); else what is wrong with it.
std::string check_view(const StridedView& view, int64_t numel);

// Empty when perm is a permutation of [0, rank) that keeps the last dim last; else what is wrong.
std::string check_output_perm(const std::vector<int64_t>& perm, size_t rank);

}  // namespace segmux::ir
