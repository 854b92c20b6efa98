// An f32 operand as a CPU kernel reads it: through the node's strided view of that input
// (ir/strided_view.h) when it has one, else the tensor as it is. The view is checked against the
// tensor it reads (a hostile model file names the node and the problem instead of reading past it).
#pragma once
#include "core/error.h"
#include "ir/strided_view.h"
#include "kernels/kernel.h"

namespace segmux::cpu {

// T = const float for an input, float for an output the kernel writes through a permutation.
template <class T>
struct StridedSpan {
  T* data = nullptr;
  Shape shape;
  std::vector<int64_t> strides;  // elements; the innermost is 1 (or its dim is 1)

  int64_t dim(int d) const { return shape[size_t(d < 0 ? d + int(shape.size()) : d)]; }
  int64_t stride(int d) const { return strides[size_t(d < 0 ? d + int(shape.size()) : d)]; }
  // Element offset of the leading dims' index `lead` (row-major over shape[0 .. rank-3]).
  int64_t lead_offset(int64_t lead) const {
    int64_t off = 0;
    for (int d = int(shape.size()) - 3; d >= 0; --d) {
      off += (lead % shape[size_t(d)]) * strides[size_t(d)];
      lead /= shape[size_t(d)];
    }
    return off;
  }
};

using StridedOperand = StridedSpan<const float>;

inline StridedOperand strided_operand(const KernelContext& ctx, int input) {
  const Tensor& t = *ctx.inputs[size_t(input)];
  StridedOperand op;
  std::optional<ir::StridedView> view = ir::input_view(ctx.node, input);
  if (!view) {
    op.data = t.data<float>();
    op.shape = t.shape();
    op.strides = contiguous_strides(op.shape);
    return op;
  }
  const std::string why = ir::check_view(*view, t.numel());
  SEGMUX_CHECK(why.empty(), ctx.node.describe(), ": input ", input, ": ", why);
  op.data = t.data<float>() + (shape_numel(view->shape) == 0 ? 0 : view->offset);
  op.shape = view->shape;
  op.strides = view->strides;
  return op;
}

}  // namespace segmux::cpu
