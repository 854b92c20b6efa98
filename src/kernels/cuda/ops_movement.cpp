// Data movement on the CUDA provider: every op here is one or more strided copies (Transpose, Slice,
// Expand, Concat, Split, the non-aliased views) or a Gather. Any element size of 1, 2, 4 or 8 bytes.
// Concat/Split pieces and contiguous Slices the memory planner already placed on their slice of the
// whole copy each element onto itself.
#include "ir/schemas/shape_math.h"
#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda::ops {

namespace {

std::string sized_elements(const KernelInit& init) {
  const size_t es = dtype_size(init.outputs[0].dtype);
  return es == 1 || es == 2 || es == 4 || es == 8 ? "" : "element size must be 1, 2, 4 or 8 bytes";
}

StridedCopy copy_over(const Shape& dims) {
  StridedCopy c;
  c.rank = int(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) c.dims[d] = dims[d];
  return c;
}

void run_copy(const StridedCopy& c, const Tensor& in, Tensor& out, Stream s) {
  check_cuda(launch_strided_copy(c, in.raw(), out.raw(), int(dtype_size(out.dtype())), s), "launch");
}

std::unique_ptr<Kernel> transpose(const KernelInit& init, Fp32Gemm) {
  const Shape in = init.inputs[0]->shape;
  std::vector<int64_t> perm = init.node.attr_ints("perm", {});
  if (perm.empty())
    for (int64_t i = int64_t(in.size()) - 1; i >= 0; --i) perm.push_back(i);
  const auto xs = contiguous_strides(in);
  StridedCopy c = copy_over(init.outputs[0].shape);
  const auto os = contiguous_strides(init.outputs[0].shape);
  for (size_t d = 0; d < perm.size(); ++d) {
    c.in_strides[d] = xs[size_t(normalized_axis(perm[d], in.size()))];
    c.out_strides[d] = os[d];
  }
  return launch_kernel([c](KernelContext& ctx, Stream s) { run_copy(c, *ctx.inputs[0], *ctx.outputs[0], s); },
                       "transpose");
}

std::string slice_check(const KernelInit& init) {
  if (init.inputs.size() == 1) return sized_elements(init);  // opset < 10: attributes
  for (size_t k = 1; k < init.inputs.size(); ++k)
    if (in_type(init, k) && !in_const(init, k)) return "Slice starts/ends/axes/steps must be constants";
  return sized_elements(init);
}

std::unique_ptr<Kernel> slice(const KernelInit& init, Fp32Gemm) {
  const Shape in = init.inputs[0]->shape;
  std::vector<int64_t> starts, ends, axes, steps;
  bool has_axes = false, has_steps = false;
  if (init.inputs.size() == 1) {
    starts = init.node.attr_ints("starts");
    ends = init.node.attr_ints("ends");
    has_axes = init.node.has_attr("axes");
    axes = init.node.attr_ints("axes");
  } else {
    starts = const_ints(*in_const(init, 1));
    ends = const_ints(*in_const(init, 2));
    if ((has_axes = in_const(init, 3) != nullptr)) axes = const_ints(*in_const(init, 3));
    if ((has_steps = in_const(init, 4) != nullptr)) steps = const_ints(*in_const(init, 4));
  }
  const auto plan =
      ir::shape_math::slice_plan(init.node, in, starts, ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr);
  const auto xs = contiguous_strides(in);
  StridedCopy c = copy_over(init.outputs[0].shape);
  const auto os = contiguous_strides(init.outputs[0].shape);
  for (size_t d = 0; d < plan.size(); ++d) {
    c.in_base += plan[d].start * xs[d];
    c.in_strides[d] = plan[d].step * xs[d];
    c.out_strides[d] = os[d];
  }
  return launch_kernel([c](KernelContext& ctx, Stream s) { run_copy(c, *ctx.inputs[0], *ctx.outputs[0], s); }, "slice");
}

std::unique_ptr<Kernel> expand(const KernelInit& init, Fp32Gemm) {
  const Shape& out = init.outputs[0].shape;
  const Broadcast b = make_broadcast(out, {init.inputs[0]->shape});
  StridedCopy c = copy_over(out);
  const auto os = contiguous_strides(out);
  for (size_t d = 0; d < out.size(); ++d) {
    c.in_strides[d] = b.strides[0][d];
    c.out_strides[d] = os[d];
  }
  return launch_kernel([c](KernelContext& ctx, Stream s) { run_copy(c, *ctx.inputs[0], *ctx.outputs[0], s); },
                       "expand");
}

// Input k of a Concat (or output k of a Split) as a copy between its own shape and its slice of the
// whole tensor at `offset` along the axis.
StridedCopy piece_copy(const Shape& piece, const Shape& whole, int64_t axis, int64_t offset, bool into_whole) {
  StridedCopy c = copy_over(piece);
  const auto ps = contiguous_strides(piece), ws = contiguous_strides(whole);
  for (size_t d = 0; d < piece.size(); ++d) {
    (into_whole ? c.in_strides : c.out_strides)[d] = ps[d];
    (into_whole ? c.out_strides : c.in_strides)[d] = ws[d];
  }
  (into_whole ? c.out_base : c.in_base) = offset * ws[size_t(axis)];
  return c;
}

std::unique_ptr<Kernel> concat(const KernelInit& init, Fp32Gemm) {
  const Shape& out = init.outputs[0].shape;
  const int64_t axis = normalized_axis(init.node.attr_int("axis", 0), out.size());
  std::vector<StridedCopy> copies;
  int64_t offset = 0;
  for (const ir::TensorType* in : init.inputs) {
    copies.push_back(piece_copy(in->shape, out, axis, offset, true));
    offset += in->shape[size_t(axis)];
  }
  return launch_kernel(
      [copies](KernelContext& ctx, Stream s) {
        for (size_t k = 0; k < copies.size(); ++k) run_copy(copies[k], *ctx.inputs[k], *ctx.outputs[0], s);
      },
      "concat");
}

std::unique_ptr<Kernel> split(const KernelInit& init, Fp32Gemm) {
  const Shape& in = init.inputs[0]->shape;
  const int64_t axis = normalized_axis(init.node.attr_int("axis", 0), in.size());
  std::vector<StridedCopy> copies;
  int64_t offset = 0;
  for (const ir::TensorType& out : init.outputs) {
    copies.push_back(piece_copy(out.shape, in, axis, offset, false));
    offset += out.shape[size_t(axis)];
  }
  return launch_kernel(
      [copies](KernelContext& ctx, Stream s) {
        for (size_t k = 0; k < copies.size(); ++k)
          if (ctx.outputs[k]) run_copy(copies[k], *ctx.inputs[0], *ctx.outputs[k], s);
      },
      "split");
}

std::unique_ptr<Kernel> same_bytes(const KernelInit&, Fp32Gemm) {  // a view the planner did not alias
  return launch_kernel(
      [](KernelContext& ctx, Stream s) {
        Tensor& y = *ctx.outputs[0];
        if (y.raw() != ctx.inputs[0]->raw() && y.nbytes())
          check_cuda(copy_on_device(y.raw(), ctx.inputs[0]->raw(), y.nbytes(), s), "launch");
      },
      "copy");
}

std::string gather_check(const KernelInit& init) {
  if (init.inputs[1]->dtype != DType::i64) return dtype_reason(init, "(T, i64)");
  if (const Tensor* idx = in_const(init, 1)) {
    const int64_t axis = normalized_axis(init.node.attr_int("axis", 0), init.inputs[0]->shape.size());
    const int64_t dim = init.inputs[0]->shape[size_t(axis)];
    for (int64_t i : const_ints(*idx))
      if (i < -dim || i >= dim)
        return "index " + std::to_string(i) + " is out of range for axis size " + std::to_string(dim);
  }
  return sized_elements(init);
}

std::unique_ptr<Kernel> gather(const KernelInit& init, Fp32Gemm) {
  const Shape& x = init.inputs[0]->shape;
  const int64_t axis = normalized_axis(init.node.attr_int("axis", 0), x.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < x.size(); ++d) inner *= x[d];
  const int64_t len = x[size_t(axis)], count = shape_numel(init.inputs[1]->shape);
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(
            launch_gather(ctx.inputs[0]->raw(), static_cast<const int64_t*>(ctx.inputs[1]->raw()),
                          ctx.outputs[0]->raw(), outer, len, count, inner, int(dtype_size(ctx.outputs[0]->dtype())), s),
            "launch");
      },
      "gather");
}

}  // namespace

void add_movement_ops(OpTable& t) {
  t["Transpose"] = {sized_elements, transpose};
  t["Slice"] = {slice_check, slice};
  t["Expand"] = {sized_elements, expand};
  t["Concat"] = {sized_elements, concat};
  t["Split"] = {sized_elements, split};
  t["Gather"] = {gather_check, gather};
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    t[op] = {sized_elements, same_bytes};
}

}  // namespace segmux::cuda::ops
