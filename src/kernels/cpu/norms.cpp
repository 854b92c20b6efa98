// Row-wise f32 kernels: Softmax (any axis), LayerNormalization, segmux GroupNorm. Shapes and threads
// here; the loops (simd.h NormFns) compute statistics in two passes (mean, then squared deviations)
// in f32 with 16-lane partial sums, which keeps them as accurate as the reference's sequential
// double-free loops or better.
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu {
namespace {

class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(int64_t axis) : axis_(axis) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    const int r = x.rank();
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    SEGMUX_CHECK(axis >= 0 && axis < std::max(r, 1), ctx.node.describe(), ": axis ", axis_, " out of range for rank ",
                 r);
    if (x.numel() == 0) return;
    int64_t outer = 1, len = r == 0 ? 1 : x.dim(int(axis)), inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = int(axis) + 1; d < r; ++d) inner *= x.dim(d);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    int nt = x.numel() < 16384 ? 1 : ctx.num_threads;
    if (inner == 1) {
      parallel_chunks(outer, nt,
                      [&](int64_t b, int64_t e) { f_.softmax_rows(px + b * len, py + b * len, e - b, len); });
      return;
    }
    const int64_t col_blocks = (inner + 15) / 16;
    parallel_chunks(outer * col_blocks, nt, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        int64_t o = w / col_blocks, c = (w % col_blocks) * 16;
        int64_t base = o * len * inner + c;
        f_.softmax_columns(px + base, py + base, len, inner, std::min<int64_t>(16, inner - c));
      }
    });
  }

 private:
  int64_t axis_;
  const NormFns& f_ = norm_fns();
};

class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(int64_t axis, float eps) : axis_(axis), eps_(eps) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    const int r = x.rank();
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    SEGMUX_CHECK(axis >= 0 && axis < r, ctx.node.describe(), ": axis ", axis_, " out of range for rank ", r);
    int64_t rows = 1, n = 1;
    for (int d = 0; d < axis; ++d) rows *= x.dim(d);
    for (int d = int(axis); d < r; ++d) n *= x.dim(d);
    const Tensor* scale = ctx.inputs[1];
    const Tensor* bias = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
    SEGMUX_CHECK(scale->numel() == n && (!bias || bias->numel() == n), ctx.node.describe(),
                 ": scale/bias must have the normalized size ", n);
    float* mean_out =
        ctx.outputs.size() > 1 && ctx.outputs[1] && ctx.outputs[1]->defined() ? ctx.outputs[1]->data<float>() : nullptr;
    float* rstd_out =
        ctx.outputs.size() > 2 && ctx.outputs[2] && ctx.outputs[2]->defined() ? ctx.outputs[2]->data<float>() : nullptr;
    if (rows * n == 0) return;
    const float* px = x.data<float>();
    float* py = ctx.outputs[0]->data<float>();
    const float* ps = scale->data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    int nt = rows * n < 16384 ? 1 : ctx.num_threads;
    const float eps = eps_;
    parallel_chunks(rows, nt, [&](int64_t b, int64_t e) {
      f_.layer_norm_rows(px + b * n, py + b * n, e - b, n, eps, ps, pb, mean_out ? mean_out + b : nullptr,
                         rstd_out ? rstd_out + b : nullptr);
    });
  }

 private:
  int64_t axis_;
  float eps_;
  const NormFns& f_ = norm_fns();
};

class GroupNormKernel : public Kernel {
 public:
  GroupNormKernel(int64_t groups, float eps) : groups_(groups), eps_(eps) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    SEGMUX_CHECK(x.rank() >= 2, ctx.node.describe(), ": input must be [N, C, ...], got ", shape_str(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1);
    SEGMUX_CHECK(groups_ > 0 && C % groups_ == 0, ctx.node.describe(), ": ", C, " channels do not split into ", groups_,
                 " groups");
    int64_t spatial = 1;
    for (int d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
    const int64_t cg = C / groups_;
    SEGMUX_CHECK(ctx.inputs[1]->numel() == C && ctx.inputs[2]->numel() == C, ctx.node.describe(),
                 ": scale and bias must have ", C, " values");
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    const float* ps = ctx.inputs[1]->data<float>();
    const float* pb = ctx.inputs[2]->data<float>();
    float* py = ctx.outputs[0]->data<float>();
    int nt = x.numel() < 16384 ? 1 : ctx.num_threads;
    const float eps = eps_;
    const int64_t groups = groups_;
    parallel_chunks(N * groups, nt,
                    [&](int64_t b, int64_t e) { f_.group_norm(px, py, b, e, groups, cg, spatial, eps, ps, pb); });
  }

 private:
  int64_t groups_;
  float eps_;
  const NormFns& f_ = norm_fns();
};

bool float_io(const KernelInit& init) {
  for (auto* t : init.inputs)
    if (t && t->dtype != DType::f32) return false;
  for (auto& t : init.outputs)
    if (t.dtype != DType::f32) return false;
  return !init.inputs.empty() && init.inputs[0];
}

}  // namespace

std::unique_ptr<Kernel> make_softmax(const KernelInit& init) {
  if (!float_io(init)) return nullptr;
  return std::make_unique<SoftmaxKernel>(init.node.attr_int("axis", -1));
}

std::unique_ptr<Kernel> make_layer_norm(const KernelInit& init) {
  if (!float_io(init) || init.inputs.size() < 2 || !init.inputs[1]) return nullptr;
  // Scale/bias must cover the normalized dims exactly; other broadcasts stay with the reference.
  const ir::TensorType* x = init.inputs[0];
  if (!x->has_shape) return nullptr;
  int64_t axis = init.node.attr_int("axis", -1);
  if (axis < 0) axis += int64_t(x->shape.size());
  if (axis < 0 || axis >= int64_t(x->shape.size())) return nullptr;
  const int64_t n = shape_numel(Shape(x->shape.begin() + axis, x->shape.end()));
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i] && (!init.inputs[i]->has_shape || shape_numel(init.inputs[i]->shape) != n)) return nullptr;
  return std::make_unique<LayerNormKernel>(init.node.attr_int("axis", -1), init.node.attr_float("epsilon", 1e-5f));
}

std::unique_ptr<Kernel> make_group_norm(const KernelInit& init) {
  if (!float_io(init) || init.inputs.size() != 3 || !init.inputs[1] || !init.inputs[2]) return nullptr;
  return std::make_unique<GroupNormKernel>(init.node.attr_int("num_groups", 1), init.node.attr_float("epsilon", 1e-5f));
}

}  // namespace segmux::cpu
