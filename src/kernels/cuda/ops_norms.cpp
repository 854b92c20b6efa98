// Normalisations, Softmax and the axis reductions on the CUDA provider (f32).
#include <algorithm>

#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda::ops {

namespace {

std::string f32_only(const KernelInit& init) { return inputs_are(init, DType::f32) ? "" : dtype_reason(init, "f32"); }

const float* f32_in(KernelContext& ctx, size_t k) {
  return k < ctx.inputs.size() && ctx.inputs[k] ? static_cast<const float*>(ctx.inputs[k]->raw()) : nullptr;
}
float* f32_out(KernelContext& ctx) { return static_cast<float*>(ctx.outputs[0]->raw()); }

std::string layer_norm_check(const KernelInit& init) {
  if (init.outputs.size() > 1) return "the CUDA LayerNormalization gives only its first output";
  const Shape& x = init.inputs[0]->shape;
  const int64_t axis = normalized_axis(init.node.attr_int("axis", -1), x.size());
  int64_t cols = 1;
  for (size_t d = size_t(axis); d < x.size(); ++d) cols *= x[d];
  for (size_t k : {size_t(1), size_t(2)})
    if (in_type(init, k) && shape_numel(in_type(init, k)->shape) != cols)
      return "scale and bias must hold one value per normalised element";
  return f32_only(init);
}

std::unique_ptr<Kernel> layer_norm(const KernelInit& init, Fp32Gemm) {
  const Shape& x = init.inputs[0]->shape;
  const int64_t axis = normalized_axis(init.node.attr_int("axis", -1), x.size());
  int64_t cols = 1;
  for (size_t d = size_t(axis); d < x.size(); ++d) cols *= x[d];
  const int64_t rows = cols ? shape_numel(x) / cols : 0;
  const float eps = init.node.attr_float("epsilon", 1e-5f);
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(launch_layer_norm(f32_in(ctx, 0), f32_in(ctx, 1), f32_in(ctx, 2), f32_out(ctx), rows, cols, eps, s),
                   "launch");
      },
      "layer norm");
}

// GroupNorm (segmux) and InstanceNormalization (= one group per channel).
std::unique_ptr<Kernel> group_norm(const KernelInit& init, bool instance) {
  const Shape& x = init.inputs[0]->shape;
  const int64_t n = x[0], c = x[1], spatial = n * c != 0 ? shape_numel(x) / (n * c) : 0;
  const int64_t groups = instance ? c : init.node.attr_int("num_groups", 1);
  const float eps = init.node.attr_float("epsilon", 1e-5f);
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(launch_group_norm(f32_in(ctx, 0), f32_in(ctx, 1), f32_in(ctx, 2), f32_out(ctx), n, c, spatial,
                                     groups, eps, s),
                   "launch");
      },
      "group norm");
}

std::string group_norm_check(const KernelInit& init) {
  const Shape& x = init.inputs[0]->shape;
  if (x.size() < 2 || init.inputs.size() < 3 || !init.inputs[1] || !init.inputs[2])
    return "the CUDA group norm takes x [N, C, ...], scale and bias";
  return f32_only(init);
}

std::string softmax_check(const KernelInit& init) {
  const size_t r = init.inputs[0]->shape.size();
  if (r == 0 || normalized_axis(init.node.attr_int("axis", -1), r) != int64_t(r) - 1)
    return "the CUDA Softmax runs over the last axis only";
  return f32_only(init);
}

std::unique_ptr<Kernel> softmax(const KernelInit& init, Fp32Gemm) {
  const Shape& x = init.inputs[0]->shape;
  const int64_t cols = x.back(), rows = cols ? shape_numel(x) / cols : 0;
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(launch_softmax(f32_in(ctx, 0), f32_out(ctx), rows, cols, s), "launch");
      },
      "softmax");
}

// The reduced axes (attribute, or constant input 1), sorted; empty = all.
bool reduce_axes(const KernelInit& init, std::vector<int64_t>* axes) {
  const size_t r = init.inputs[0]->shape.size();
  if (init.node.has_attr("axes")) {
    *axes = init.node.attr_ints("axes");
  } else if (in_type(init, 1)) {
    if (!in_const(init, 1)) return false;
    *axes = const_ints(*in_const(init, 1));
  }
  if (axes->empty() && init.node.attr_int("noop_with_empty_axes", 0) == 0)
    for (size_t d = 0; d < r; ++d) axes->push_back(int64_t(d));
  for (int64_t& a : *axes) a = normalized_axis(a, r);
  std::sort(axes->begin(), axes->end());
  return true;
}

std::string reduce_check(const KernelInit& init) {
  std::vector<int64_t> axes;
  if (!reduce_axes(init, &axes)) return "the reduced axes must be constants";
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return "the CUDA reductions take one contiguous range of axes";
  if (axes.empty()) return "a reduction over no axes (noop_with_empty_axes) has no CUDA kernel";
  return init.inputs[0]->dtype == DType::f32 ? "" : dtype_reason(init, "f32");
}

std::unique_ptr<Kernel> reduce(const KernelInit& init, Reduce r) {
  std::vector<int64_t> axes;
  reduce_axes(init, &axes);
  const Shape& x = init.inputs[0]->shape;
  int64_t outer = 1, len = 1, inner = 1;
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t a = int64_t(d);
    (a < axes.front() ? outer : a > axes.back() ? inner : len) *= x[d];
  }
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(launch_reduce(r, f32_in(ctx, 0), f32_out(ctx), outer, len, inner, s), "launch");
      },
      "reduce");
}

}  // namespace

void add_norm_ops(OpTable& t) {
  t["LayerNormalization"] = {layer_norm_check, layer_norm};
  t["segmux.GroupNorm"] = {group_norm_check, [](const KernelInit& init, Fp32Gemm) { return group_norm(init, false); }};
  t["InstanceNormalization"] = {group_norm_check,
                                [](const KernelInit& init, Fp32Gemm) { return group_norm(init, true); }};
  t["Softmax"] = {softmax_check, softmax};
  t["ReduceSum"] = {reduce_check, [](const KernelInit& init, Fp32Gemm) { return reduce(init, Reduce::sum); }};
  t["ReduceMean"] = {reduce_check, [](const KernelInit& init, Fp32Gemm) { return reduce(init, Reduce::mean); }};
  t["ReduceMax"] = {reduce_check, [](const KernelInit& init, Fp32Gemm) { return reduce(init, Reduce::max); }};
}

}  // namespace segmux::cuda::ops
