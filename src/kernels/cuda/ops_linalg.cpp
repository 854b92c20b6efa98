// Linear, MatMul (cuBLASLt) and Attention on the CUDA provider.
// GEMM precision: nodes the compiler marked bf16 multiply bf16 values (weights converted once, at
// kernel creation; activations per run into a scratch buffer, unless they are bf16 already) with f32
// accumulation; the others use exact fp32 or TF32 as the provider was asked (Fp32Gemm). A bf16 Linear
// output (attr bf16_output) is the f32 result stored as bf16 at the end.
#include <cmath>

#include "ir/precision.h"
#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda::ops {

namespace {

struct GemmPlan {
  GemmShape shape;
  int64_t a_elems = 0, w_elems = 0;  // per whole tensor (bf16 scratch sizes)
  bool bias = false, gelu = false, relu = false;
  bool residual = false, residual_as_c = false;  // a residual of the output's own shape rides as C
  bool a_bf16 = false, y_bf16 = false;           // bf16 activations (bf16 Linears only)
};

class GemmKernel : public Kernel {
 public:
  GemmKernel(const GemmPlan& plan, const Tensor* constant_w) : plan_(plan) {
    if (plan_.shape.mode != GemmMode::bf16) return;
    if (!plan_.a_bf16) a16_ = std::make_shared<DeviceBuffer>(size_t(plan_.a_elems) * 2);
    w16_ = std::make_shared<DeviceBuffer>(size_t(plan_.w_elems) * 2);
    if (plan_.y_bf16) y32_ = std::make_shared<DeviceBuffer>(size_t(plan_.shape.m * plan_.shape.n) * 4);
    if (constant_w) {  // converted once: bf16 weights, rounded to nearest even as Tensor::cast does
      Tensor w = constant_w->cast(DType::bf16);
      Stream s = current_stream();
      check_cuda(copy_to_device(w16_->data(), w.raw(), w.nbytes(), s), "uploading bf16 weights");
      check_cuda(stream_sync(s), "uploading bf16 weights");
      w_converted_ = true;
    }
  }

  void run(KernelContext& ctx) override {
    try {
      launch(ctx, current_stream());
    } catch (const Error& e) {
      fail(ctx.node.describe(), " (CUDA GEMM): ", e.what());
    }
  }

  size_t prepacked_bytes() const override { return w_converted_ ? w16_->bytes() : 0; }

 private:
  void launch(KernelContext& ctx, Stream s) {
    const void* a = ctx.inputs[0]->raw();
    const void* w = ctx.inputs[1]->raw();
    if (plan_.shape.mode == GemmMode::bf16) {
      if (!plan_.a_bf16) {
        check_cuda(launch_cast(ScalarKind::f32, ScalarKind::bf16, a, a16_->data(), plan_.a_elems, s), "bf16 input");
        a = a16_->data();
      }
      if (!w_converted_)
        check_cuda(launch_cast(ScalarKind::f32, ScalarKind::bf16, w, w16_->data(), plan_.w_elems, s), "bf16 weights");
      w = w16_->data();
    }
    const Tensor* bias = plan_.bias ? ctx.inputs[2] : nullptr;
    const Tensor* res = plan_.residual ? ctx.inputs[3] : nullptr;
    Tensor& y = *ctx.outputs[0];
    float* d = static_cast<float*>(plan_.y_bf16 ? y32_->data() : y.raw());
    const float* c = plan_.residual_as_c ? static_cast<const float*>(res->raw()) : nullptr;
    check_cuda(launch_gemm(plan_.shape, a, w, bias ? static_cast<const float*>(bias->raw()) : nullptr, c, d, s),
               "cuBLASLt");
    if (plan_.gelu || plan_.relu) {  // in place (GELU: exact erf; ReLU: as the Relu op)
      PointwiseProgram p;
      p.count = 1;
      p.step[0] = plan_.gelu ? Step::gelu : Step::relu;
      const float* in[1] = {d};
      check_cuda(launch_pointwise(p, make_broadcast(y.shape(), {y.shape()}), 1, in, d, y.numel(), s), "activation");
    }
    if (res && !plan_.residual_as_c) {
      PointwiseProgram p;
      p.count = 1;
      p.step[0] = Step::add;
      const float* in[2] = {d, static_cast<const float*>(res->raw())};
      check_cuda(launch_pointwise(p, make_broadcast(y.shape(), {y.shape(), res->shape()}), 2, in, d, y.numel(), s),
                 "residual");
    }
    if (plan_.y_bf16)
      check_cuda(launch_cast(ScalarKind::f32, ScalarKind::bf16, d, y.raw(), y.numel(), s), "bf16 output");
  }

  GemmPlan plan_;
  std::shared_ptr<DeviceBuffer> a16_, w16_, y32_;
  bool w_converted_ = false;
};

GemmMode mode_of(const ir::Node& n, Fp32Gemm fp32) {
  if (ir::wants_bf16(n)) return GemmMode::bf16;
  return fp32 == Fp32Gemm::tf32 ? GemmMode::tf32 : GemmMode::fp32;
}

std::string f32_only(const KernelInit& init) { return inputs_are(init, DType::f32) ? "" : dtype_reason(init, "f32"); }

std::string linear_check(const KernelInit& init) {
  if (init.inputs[1]->shape.size() != 2 || init.inputs[1]->shape[0] == 0)
    return "the CUDA Linear takes a [K, N] weight with K > 0";
  const std::string act = init.node.attr_string("activation", "");
  if (!act.empty() && act != "gelu" && act != "relu") return "unknown activation '" + act + "'";
  // bf16 activations (input 0, the output) only where the GEMM runs in bf16.
  if (!ir::wants_bf16(init.node) || (in_type(init, 0)->dtype != DType::bf16 && init.outputs[0].dtype != DType::bf16))
    return f32_only(init);
  if (init.outputs[0].dtype != DType::f32 && init.outputs[0].dtype != DType::bf16) return "an f32 or bf16 output";
  for (size_t k = 1; k < init.inputs.size(); ++k)
    if (in_type(init, k) && in_type(init, k)->dtype != DType::f32)
      return dtype_reason(init, "f32 weight, bias, residual");
  return "";
}

std::unique_ptr<Kernel> linear(const KernelInit& init, Fp32Gemm fp32) {
  GemmPlan p;
  const Shape& out = init.outputs[0].shape;
  p.shape.k = init.inputs[1]->shape[0];
  p.shape.n = init.inputs[1]->shape[1];
  p.shape.m = shape_numel(init.inputs[0]->shape) / p.shape.k;
  p.shape.mode = mode_of(init.node, fp32);
  p.a_elems = p.shape.m * p.shape.k;
  p.w_elems = p.shape.k * p.shape.n;
  p.bias = in_type(init, 2) != nullptr;
  p.gelu = init.node.attr_string("activation", "") == "gelu";
  p.relu = init.node.attr_string("activation", "") == "relu";
  p.residual = in_type(init, 3) != nullptr;
  p.residual_as_c = p.residual && !p.gelu && !p.relu && in_type(init, 3)->shape == out;
  p.a_bf16 = in_type(init, 0)->dtype == DType::bf16;
  p.y_bf16 = init.outputs[0].dtype == DType::bf16;
  return std::make_unique<GemmKernel>(p, in_const(init, 1));
}

// MatMul: B 2-D (one GEMM over all rows of A), or A and B with the same leading dims, or A 2-D shared by
// a batched B.
std::string matmul_check(const KernelInit& init) {
  const Shape &a = init.inputs[0]->shape, &b = init.inputs[1]->shape;
  if (a.size() < 2 || b.size() < 2) return "the CUDA MatMul takes inputs of rank >= 2";
  if (a.back() == 0) return "the CUDA MatMul takes K > 0";
  const bool same_lead = a.size() == b.size() && std::equal(a.begin(), a.end() - 2, b.begin());
  if (b.size() != 2 && a.size() != 2 && !same_lead)
    return "the CUDA MatMul takes a 2-D B, a 2-D A or equal leading dims (no general broadcast yet)";
  return f32_only(init);
}

std::unique_ptr<Kernel> matmul(const KernelInit& init, Fp32Gemm fp32) {
  const Shape &a = init.inputs[0]->shape, &b = init.inputs[1]->shape;
  GemmPlan p;
  p.shape.k = a.back();
  p.shape.n = b.back();
  p.shape.mode = mode_of(init.node, fp32);
  if (b.size() == 2) {
    p.shape.m = shape_numel(a) / p.shape.k;
  } else {
    p.shape.m = a[a.size() - 2];
    p.shape.batch = shape_numel(b) / (p.shape.k * p.shape.n);
    p.shape.stride_a = a.size() == 2 ? 0 : p.shape.m * p.shape.k;
    p.shape.stride_w = p.shape.k * p.shape.n;
    p.shape.stride_d = p.shape.m * p.shape.n;
  }
  p.a_elems = shape_numel(a);
  p.w_elems = shape_numel(b);
  return std::make_unique<GemmKernel>(p, in_const(init, 1));
}

std::string attention_check(const KernelInit& init) {
  for (size_t k = 0; k < 3; ++k)
    if (init.inputs[k]->dtype != DType::f32) return dtype_reason(init, "f32 q, k, v");
  const Shape &q = init.inputs[0]->shape, &v = init.inputs[2]->shape;
  if (q.back() > kAttentionMaxHead || v.back() > kAttentionMaxHead)
    return "head sizes above " + std::to_string(kAttentionMaxHead);
  if (const ir::TensorType* m = in_type(init, 3); m && m->dtype != DType::f32 && m->dtype != DType::boolean)
    return "the mask must be f32 or bool";
  return "";
}

std::unique_ptr<Kernel> attention(const KernelInit& init, Fp32Gemm) {
  const Shape &q = init.inputs[0]->shape, &k = init.inputs[1]->shape, &v = init.inputs[2]->shape;
  const size_t r = q.size();
  AttentionShape a;
  a.lq = q[r - 2];
  a.d = q[r - 1];
  a.lk = k[r - 2];
  a.dv = v[r - 1];
  a.batch = 1;
  a.lead_rank = int(r - 2);
  for (size_t d = 0; d + 2 < r; ++d) {
    a.lead_dims[d] = q[d];
    a.batch *= q[d];
  }
  a.scale = init.node.has_attr("scale") ? init.node.attr_float("scale", 1.f) : float(1.0 / std::sqrt(double(a.d)));
  if (const ir::TensorType* m = in_type(init, 3)) {
    Shape scores = q;
    scores[r - 1] = a.lk;
    const Broadcast b = make_broadcast(scores, {m->shape});
    for (size_t d = 0; d + 2 < r; ++d) a.mask_lead[d] = b.strides[0][d];
    a.mask_i = b.strides[0][r - 2];
    a.mask_j = b.strides[0][r - 1];
    a.mask_kind = m->dtype == DType::boolean ? 2 : 1;
  }
  return launch_kernel(
      [a](KernelContext& ctx, Stream s) {
        const void* mask = ctx.inputs.size() > 3 && ctx.inputs[3] ? ctx.inputs[3]->raw() : nullptr;
        check_cuda(launch_attention(a, static_cast<const float*>(ctx.inputs[0]->raw()),
                                    static_cast<const float*>(ctx.inputs[1]->raw()),
                                    static_cast<const float*>(ctx.inputs[2]->raw()), mask,
                                    static_cast<float*>(ctx.outputs[0]->raw()), s),
                   "launch");
      },
      "attention");
}

}  // namespace

void add_linalg_ops(OpTable& t) {
  t["segmux.Linear"] = {linear_check, linear};
  t["MatMul"] = {matmul_check, matmul};
  t["segmux.Attention"] = {attention_check, attention};
}

}  // namespace segmux::cuda::ops
