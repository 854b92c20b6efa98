// Resize, mode "nearest", f32, multi-threaded (the detector's pixel decoder upsamples its features 2x
// this way: ~6 % of the detector on the single-threaded reference kernel). A pure index mapping:
// per-axis source indices by the ONNX formulas the reference uses, then rows gathered in parallel.
// Other modes, tf_crop_and_resize and other dtypes stay with the reference kernel.
#include <cstring>

#include "ir/schemas/shape_math.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"

namespace segmux::cpu {
namespace {

class ResizeNearestKernel : public Kernel {
 public:
  ResizeNearestKernel(std::string ctm, std::string nearest) : ctm_(std::move(ctm)), nearest_(std::move(nearest)) {}

  void run(KernelContext& ctx) override {
    const Tensor& X = *ctx.inputs[0];
    Tensor& Y = *ctx.outputs[0];
    const int64_t r = X.rank();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    if (ctx.inputs.size() > 2 && ctx.inputs[2] && ctx.inputs[2]->numel() > 0) scales = as_doubles(*ctx.inputs[2]);
    if (ctx.inputs.size() > 3 && ctx.inputs[3] && ctx.inputs[3]->numel() > 0) {
      const Tensor& s = *ctx.inputs[3];
      SEGMUX_CHECK(s.dtype() == DType::i64, ctx.node.describe(), ": sizes must be int64");
      sizes.assign(s.data<int64_t>(), s.data<int64_t>() + s.numel());
    }
    auto plan = ir::shape_math::resize_plan(ctx.node, X.shape(), scales.empty() ? nullptr : &scales,
                                            sizes.empty() ? nullptr : &sizes);
    SEGMUX_CHECK(plan.out == Y.shape(), ctx.node.describe(), ": output shape ", shape_str(Y.shape()),
                 " is not the resized shape ", shape_str(plan.out));
    if (Y.numel() == 0) return;
    SEGMUX_CHECK(X.numel() > 0, ctx.node.describe(), ": cannot resize an empty tensor to a non-empty one");
    // Source offset (in elements) of each output index, per axis.
    std::vector<std::vector<int64_t>> src(static_cast<size_t>(r));
    int64_t stride = 1;
    for (int64_t a = r; a-- > 0;) {
      src[size_t(a)] = axis_sources(X.dim(int(a)), plan.out[size_t(a)], plan.scales[size_t(a)], stride);
      stride *= X.dim(int(a));
    }
    const int64_t W = plan.out[size_t(r - 1)], rows = Y.numel() / W;
    const std::vector<int64_t>& last = src[size_t(r - 1)];
    const float* x = X.data<float>();
    float* y = Y.data<float>();
    parallel_chunks(rows, Y.numel() < 32768 ? 1 : ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t off = 0, rem = row;
        for (int64_t a = r - 1; a-- > 0;) {
          off += src[size_t(a)][size_t(rem % plan.out[size_t(a)])];
          rem /= plan.out[size_t(a)];
        }
        const float* xs = x + off;
        float* yr = y + row * W;
        for (int64_t j = 0; j < W; ++j) yr[j] = xs[last[size_t(j)]];
      }
    });
  }

 private:
  static std::vector<double> as_doubles(const Tensor& t) {
    std::vector<double> v(size_t(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.get_as_double(i);
    return v;
  }

  // The reference kernel's coordinate transform and rounding (kernels/reference/resize.cpp), times the
  // axis stride.
  std::vector<int64_t> axis_sources(int64_t in, int64_t out, double scale, int64_t stride) const {
    std::vector<int64_t> idx(static_cast<size_t>(out));
    const double len = double(in) * scale;
    for (int64_t o = 0; o < out; ++o) {
      const double xr = double(o);
      double x;
      if (ctm_ == "half_pixel")
        x = (xr + 0.5) / scale - 0.5;
      else if (ctm_ == "pytorch_half_pixel")
        x = len > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
      else if (ctm_ == "align_corners")
        x = len == 1 ? 0.0 : xr * double(in - 1) / (len - 1);
      else if (ctm_ == "asymmetric")
        x = xr / scale;
      else
        x = (xr + 0.5) / scale;  // tf_half_pixel_for_nn (the factory admits no other)
      double rounded;
      if (nearest_ == "round_prefer_floor")
        rounded = std::ceil(x - 0.5);
      else if (nearest_ == "round_prefer_ceil")
        rounded = std::floor(x + 0.5);
      else if (nearest_ == "floor")
        rounded = std::floor(x);
      else
        rounded = std::ceil(x);
      idx[size_t(o)] = std::clamp<int64_t>(int64_t(rounded), 0, in - 1) * stride;
    }
    return idx;
  }

  std::string ctm_, nearest_;
};

}  // namespace

std::unique_ptr<Kernel> make_resize(const KernelInit& init) {
  const ir::Node& n = init.node;
  if (init.inputs.empty() || !init.inputs[0] || init.inputs[0]->dtype != DType::f32) return nullptr;
  if (!init.inputs[0]->has_shape || init.inputs[0]->shape.empty()) return nullptr;
  if (n.attr_string("mode", "nearest") != "nearest") return nullptr;
  const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = n.attr_string("nearest_mode", "round_prefer_floor");
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" && ctm != "asymmetric" &&
      ctm != "tf_half_pixel_for_nn")
    return nullptr;
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" && nearest != "ceil")
    return nullptr;
  // The opset-18 attributes change the size rule: those models stay with the reference.
  if (n.has_attr("antialias") || n.has_attr("axes") || n.has_attr("keep_aspect_ratio_policy")) return nullptr;
  return std::make_unique<ResizeNearestKernel>(ctm, nearest);
}

}  // namespace segmux::cpu
