// Shape arithmetic shared by the schemas (shape inference) and the reference kernels, so both agree.
// Every function takes the node (for error messages) and throws segmux::Error naming it.
#pragma once
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace segmux::ir::shape_math {

// Slice (opset 13): one entry per input axis (untouched axes: start 0, step 1, len = dim).
struct SliceAxis {
  int64_t start = 0, step = 1, len = 0;
};
std::vector<SliceAxis> slice_plan(const Node& n, const Shape& in, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& ends, const std::vector<int64_t>* axes,
                                  const std::vector<int64_t>* steps);

// Reshape target with 0 (copy, unless allowzero) and -1 (infer) resolved.
Shape reshape_target(const Node& n, const Shape& in, const std::vector<int64_t>& shape, bool allowzero);

// Conv / pooling geometry for the spatial dims. `x` is the full input shape [N, C, D1...];
// `kernel` the spatial kernel sizes. Reads strides, dilations, pads, auto_pad (and ceil_mode for pools).
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end, out;
};
Window conv_window(const Node& n, const Shape& x, const std::vector<int64_t>& kernel, bool pooling);
// ConvTranspose: W is [C, M/group, k...]; output spatial sizes and the pads actually used.
Window conv_transpose_window(const Node& n, const Shape& x, const std::vector<int64_t>& kernel);

// Resize (opset 13..17): output sizes and the per-axis scale used by the coordinate transform.
struct ResizePlan {
  Shape out;
  std::vector<double> scales;
};
ResizePlan resize_plan(const Node& n, const Shape& x, const std::vector<double>* scales,
                       const std::vector<int64_t>* sizes);

// Numpy broadcast of two shapes.
Shape broadcast_shapes(const Node& n, const Shape& a, const Shape& b);

}  // namespace segmux::ir::shape_math

namespace segmux::ir::shape_math {

// Einsum: every subscript letter (and every dimension covered by "...") gets a label id; sizes are
// broadcast across inputs (a size-1 dim under "..." broadcasts).
struct EinsumPlan {
  std::vector<int64_t> label_size;             // per label id
  std::vector<std::vector<int>> input_labels;  // per input, per dim: label id
  std::vector<int> output_labels;              // per output dim: label id
  Shape out;
};
EinsumPlan einsum_plan(const Node& n, const std::vector<Shape>& inputs);

}  // namespace segmux::ir::shape_math
