// Index-driven and positional ops on the CUDA provider: segmux Rope, ArgMax, GatherElements,
// nearest-neighbour Resize (per-axis source indices computed at load, in the reference's arithmetic) and
// RoiAlign (in double, as the reference; its batch indices must be constants, checked at load).
#include <algorithm>
#include <cmath>

#include "ir/schemas/shape_math.h"
#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda::ops {

namespace {

std::string rope_check(const KernelInit& init) {
  if (!inputs_are(init, DType::f32)) return dtype_reason(init, "f32");
  const Shape& x = init.inputs[0]->shape;
  if (x.size() < 2 || x.back() % 2 != 0) return "Rope takes x [..., L, D] with an even D";
  const int64_t pairs = x[x.size() - 2] * (x.back() / 2);
  if (shape_numel(init.inputs[1]->shape) != pairs || shape_numel(init.inputs[2]->shape) != pairs)
    return "cos/sin do not hold L x D/2 values";
  return "";
}

std::unique_ptr<Kernel> rope(const KernelInit& init, Fp32Gemm) {
  const Shape& x = init.inputs[0]->shape;
  const int64_t half = x.back() / 2, len = x[x.size() - 2], rows = x.back() ? shape_numel(x) / x.back() : 0;
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(launch_rope(static_cast<const float*>(ctx.inputs[0]->raw()),
                               static_cast<const float*>(ctx.inputs[1]->raw()),
                               static_cast<const float*>(ctx.inputs[2]->raw()),
                               static_cast<float*>(ctx.outputs[0]->raw()), rows, len, half, s),
                   "launch");
      },
      "rope");
}

std::string argmax_check(const KernelInit& init) {
  if (init.inputs[0]->dtype != DType::f32) return dtype_reason(init, "f32");
  const Shape& x = init.inputs[0]->shape;
  if (x.empty()) return "ArgMax of a scalar";
  if (x[size_t(normalized_axis(init.node.attr_int("axis", 0), x.size()))] == 0) return "ArgMax over an empty axis";
  return "";
}

std::unique_ptr<Kernel> argmax(const KernelInit& init, Fp32Gemm) {
  const Shape& x = init.inputs[0]->shape;
  const int64_t axis = normalized_axis(init.node.attr_int("axis", 0), x.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < x.size(); ++d) inner *= x[d];
  const int64_t len = x[size_t(axis)];
  const bool last = init.node.attr_int("select_last_index", 0) != 0;
  return launch_kernel(
      [=](KernelContext& ctx, Stream s) {
        check_cuda(launch_argmax(static_cast<const float*>(ctx.inputs[0]->raw()),
                                 static_cast<int64_t*>(ctx.outputs[0]->raw()), outer, len, inner, last, s),
                   "launch");
      },
      "argmax");
}

std::string gather_elements_check(const KernelInit& init) {
  if (init.inputs[1]->dtype != DType::i64) return dtype_reason(init, "(T, i64)");
  const size_t es = dtype_size(init.inputs[0]->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8) return "element size must be 1, 2, 4 or 8 bytes";
  const Shape &x = init.inputs[0]->shape, &idx = init.inputs[1]->shape;
  if (x.size() != idx.size() || x.empty()) return "data and indices must have the same rank >= 1";
  const int64_t axis = normalized_axis(init.node.attr_int("axis", 0), x.size());
  for (size_t d = 0; d < x.size(); ++d)
    if (int64_t(d) != axis && idx[d] > x[d]) return "indices shape exceeds the data shape";
  return "";
}

std::unique_ptr<Kernel> gather_elements(const KernelInit& init, Fp32Gemm) {
  const Shape &x = init.inputs[0]->shape, &idx = init.inputs[1]->shape;
  GatherElements g;
  g.rank = int(x.size());
  g.axis = int(normalized_axis(init.node.attr_int("axis", 0), x.size()));
  g.axis_len = x[size_t(g.axis)];
  const auto xs = contiguous_strides(x);
  for (size_t d = 0; d < x.size(); ++d) {
    g.out_dims[d] = idx[d];
    g.in_strides[d] = xs[d];
  }
  return launch_kernel(
      [g](KernelContext& ctx, Stream s) {
        check_cuda(launch_gather_elements(g, ctx.inputs[0]->raw(), static_cast<const int64_t*>(ctx.inputs[1]->raw()),
                                          ctx.outputs[0]->raw(), int(dtype_size(ctx.outputs[0]->dtype())), s),
                   "launch");
      },
      "gather elements");
}

std::string resize_check(const KernelInit& init) {
  const ir::Node& n = init.node;
  if (n.attr_string("mode", "nearest") != "nearest") return "the CUDA Resize is nearest-neighbour only";
  const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" && ctm != "asymmetric" &&
      ctm != "tf_half_pixel_for_nn")
    return "coordinate_transformation_mode '" + ctm + "' has no CUDA kernel";
  const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    return "unknown nearest_mode '" + nm + "'";
  for (size_t k = 1; k < init.inputs.size(); ++k)
    if (in_type(init, k) && !in_const(init, k)) return "Resize roi/scales/sizes must be constants";
  const size_t es = dtype_size(init.inputs[0]->dtype);
  return es == 1 || es == 2 || es == 4 || es == 8 ? "" : "element size must be 1, 2, 4 or 8 bytes";
}

// Source index of output position o along an axis of `in` values resized by `scale`.
int64_t nearest_source(const ir::Node& n, int64_t o, int64_t in, double scale) {
  const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
  const double xr = double(o), len = double(in) * scale;
  double x = xr / scale;  // asymmetric
  if (ctm == "half_pixel") x = (xr + 0.5) / scale - 0.5;
  if (ctm == "pytorch_half_pixel") x = len > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
  if (ctm == "align_corners") x = len == 1 ? 0.0 : xr * double(in - 1) / (len - 1);
  if (ctm == "tf_half_pixel_for_nn") x = (xr + 0.5) / scale;
  double r = std::ceil(x - 0.5);  // round_prefer_floor
  if (nm == "round_prefer_ceil") r = std::floor(x + 0.5);
  if (nm == "floor") r = std::floor(x);
  if (nm == "ceil") r = std::ceil(x);
  return std::clamp<int64_t>(int64_t(r), 0, in - 1);
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelInit& init) {
    const Shape& x = init.inputs[0]->shape;
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    if (const Tensor* t = in_const(init, 2); t && t->numel() > 0)
      for (int64_t i = 0; i < t->numel(); ++i) scales.push_back(t->get_as_double(i));
    if (const Tensor* t = in_const(init, 3); t && t->numel() > 0) sizes = const_ints(*t);
    const auto plan =
        ir::shape_math::resize_plan(init.node, x, scales.empty() ? nullptr : &scales, sizes.empty() ? nullptr : &sizes);
    const auto xs = contiguous_strides(x);
    std::vector<int64_t> tables;
    g_.rank = int(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      g_.out_dims[d] = plan.out[d];
      g_.in_strides[d] = xs[d];
      g_.table_offset[d] = int64_t(tables.size());
      for (int64_t o = 0; o < plan.out[d]; ++o) tables.push_back(nearest_source(init.node, o, x[d], plan.scales[d]));
    }
    Tensor host = Tensor::from_vector<int64_t>({int64_t(tables.size())}, tables);
    tables_ = std::make_shared<DeviceBuffer>(host.nbytes());
    Stream s = current_stream();
    check_cuda(copy_to_device(tables_->data(), host.raw(), host.nbytes(), s), "Resize index tables");
    check_cuda(stream_sync(s), "Resize index tables");
  }

  void run(KernelContext& ctx) override {
    check_cuda(launch_axis_gather(g_, ctx.inputs[0]->raw(), static_cast<const int64_t*>(tables_->data()),
                                  ctx.outputs[0]->raw(), int(dtype_size(ctx.outputs[0]->dtype())), current_stream()),
               ctx.node.describe() + " (CUDA resize)");
  }

 private:
  AxisGather g_;
  std::shared_ptr<DeviceBuffer> tables_;
};

std::string roi_align_check(const KernelInit& init) {
  const ir::TensorType *x = init.inputs[0], *rois = init.inputs[1], *batch = init.inputs[2];
  if (x->dtype != DType::f32 || rois->dtype != DType::f32 || batch->dtype != DType::i64)
    return dtype_reason(init, "(f32, f32, i64)");
  if (x->shape.size() != 4 || rois->shape.size() != 2 || rois->shape[1] != 4)
    return "RoiAlign takes x [N, C, H, W], rois [R, 4]";
  const std::string mode = init.node.attr_string("mode", "avg");
  const std::string ctm = init.node.attr_string("coordinate_transformation_mode", "half_pixel");
  if ((mode != "avg" && mode != "max") || (ctm != "half_pixel" && ctm != "output_half_pixel"))
    return "unknown RoiAlign mode or coordinate_transformation_mode";
  const Tensor* b = in_const(init, 2);
  if (!b) return "the CUDA RoiAlign needs constant batch indices (checked at load)";
  for (int64_t i : const_ints(*b))
    if (i < 0 || i >= x->shape[0])
      return "batch index " + std::to_string(i) + " is out of range for batch size " + std::to_string(x->shape[0]);
  if (rois->shape[0] > 0 && x->shape[1] > 0 && (x->shape[2] == 0 || x->shape[3] == 0))
    return "cannot sample an empty feature map";
  return "";
}

std::unique_ptr<Kernel> roi_align(const KernelInit& init, Fp32Gemm) {
  const Shape& x = init.inputs[0]->shape;
  const ir::Node& n = init.node;
  RoiAlignShape a;
  a.n = x[0], a.c = x[1], a.h = x[2], a.w = x[3];
  a.rois = init.inputs[1]->shape[0];
  a.ph = n.attr_int("output_height", 1);
  a.pw = n.attr_int("output_width", 1);
  a.ratio = n.attr_int("sampling_ratio", 0);
  a.spatial_scale = n.attr_float("spatial_scale", 1.f);
  a.half_pixel = n.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  a.is_max = n.attr_string("mode", "avg") == "max";
  return launch_kernel(
      [a](KernelContext& ctx, Stream s) {
        check_cuda(launch_roi_align(a, static_cast<const float*>(ctx.inputs[0]->raw()),
                                    static_cast<const float*>(ctx.inputs[1]->raw()),
                                    static_cast<const int64_t*>(ctx.inputs[2]->raw()),
                                    static_cast<float*>(ctx.outputs[0]->raw()), s),
                   "launch");
      },
      "roi align");
}

}  // namespace

void add_index_ops(OpTable& t) {
  t["RoiAlign"] = {roi_align_check, roi_align};
  t["Resize"] = {resize_check, [](const KernelInit& init, Fp32Gemm) -> std::unique_ptr<Kernel> {
                   return std::make_unique<ResizeKernel>(init);
                 }};
  t["segmux.Rope"] = {rope_check, rope};
  t["ArgMax"] = {argmax_check, argmax};
  t["GatherElements"] = {gather_elements_check, gather_elements};
}

}  // namespace segmux::cuda::ops
