// Reference kernels of the segmux fused ops (semantics in src/ir/schemas/segmux_ops.cpp): plain loops,
// statistics and GELU in double, the ground truth the optimized kernels are tested against.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/tensor_ops.h"
#include "ir/pointwise.h"
#include "ir/precision.h"
#include "ir/strided_view.h"
#include "kernels/kernel.h"

namespace segmux::ref {
namespace {

double gelu_exact(double x) { return 0.5 * x * std::erfc(-x * 0.70710678118654752440); }

// Offset into a tensor of shape `s` broadcast (numpy rules) to `out`, for the output index `idx`.
int64_t broadcast_offset(const Shape& s, const Shape& out, const std::vector<int64_t>& idx) {
  int64_t off = 0, stride = 1;
  const int shift = int(out.size()) - int(s.size());
  for (int d = int(s.size()) - 1; d >= 0; --d) {
    if (s[size_t(d)] != 1) off += idx[size_t(d + shift)] * stride;
    stride *= s[size_t(d)];
  }
  return off;
}

void next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return;
    idx[d] = 0;
  }
}

// A and W may be bf16 (read as their f32 values); a bf16 output (attr bf16_output) is the f32 result
// rounded to nearest even.
void linear(KernelContext& ctx) {
  const Tensor a = as_f32(*ctx.inputs[0]);
  const Tensor w = as_f32(*ctx.inputs[1]);
  const Tensor* bias = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const Tensor* res = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  Tensor& out = *ctx.outputs[0];
  Tensor y = out.dtype() == DType::f32 ? out : Tensor(DType::f32, out.shape());
  const int64_t K = w.dim(0), N = w.dim(1);
  SEGMUX_CHECK(a.dim(-1) == K, ctx.node.describe(), ": input ", shape_str(a.shape()), " does not end in K=", K);
  const int64_t M = K == 0 ? y.numel() / std::max<int64_t>(N, 1) : a.numel() / K;
  const std::string act = ctx.node.attr_string("activation", "");
  const bool gelu = act == "gelu", relu = act == "relu";
  const float* pa = a.data<float>();
  const float* pw = w.data<float>();
  float* py = y.data<float>();
  std::vector<float> row(static_cast<size_t>(N));
  for (int64_t m = 0; m < M; ++m) {
    std::fill(row.begin(), row.end(), 0.f);
    for (int64_t k = 0; k < K; ++k) {
      const float av = pa[m * K + k];
      const float* wr = pw + k * N;
      for (int64_t n = 0; n < N; ++n) row[size_t(n)] += av * wr[n];
    }
    for (int64_t n = 0; n < N; ++n) {
      float v = row[size_t(n)];
      if (bias) v += bias->data<float>()[n];
      if (gelu) v = float(gelu_exact(v));
      if (relu) v = v > 0.f ? v : 0.f;  // as the Relu kernel
      py[m * N + n] = v;
    }
  }
  if (res) {
    std::vector<int64_t> idx(y.shape().size(), 0);
    const float* pr = res->data<float>();
    for (int64_t i = 0; i < y.numel(); ++i, next_index(idx, y.shape()))
      py[i] += pr[broadcast_offset(res->shape(), y.shape(), idx)];
  }
  if (out.dtype() != DType::f32) {
    const Tensor c = y.cast(out.dtype());
    std::memcpy(out.raw(), c.raw(), c.nbytes());
  }
}

void gelu(KernelContext& ctx) {
  const float* x = ctx.inputs[0]->data<float>();
  float* y = ctx.outputs[0]->data<float>();
  const bool round_in = ctx.node.attr_int(ir::kGeluRoundInput, 0) != 0;
  const bool round_out = ctx.node.attr_int(ir::kGeluRoundOutput, 0) != 0;
  for (int64_t i = 0; i < ctx.inputs[0]->numel(); ++i) {
    y[i] = float(gelu_exact(round_in ? round_to_bf16(x[i]) : x[i]));
    if (round_out) y[i] = round_to_bf16(y[i]);
  }
}

void group_norm(KernelContext& ctx) {
  const Tensor& x = *ctx.inputs[0];
  const int64_t groups = ctx.node.attr_int("num_groups", 1);
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  SEGMUX_CHECK(x.rank() >= 2 && groups >= 1 && x.dim(1) % groups == 0, ctx.node.describe(), ": input ",
               shape_str(x.shape()), " does not split into ", groups, " channel groups");
  const int64_t N = x.dim(0), C = x.dim(1), cg = C / groups;
  const int64_t spatial = C == 0 ? 0 : x.numel() / (N * C);
  const float* px = x.data<float>();
  const float* scale = ctx.inputs[1]->data<float>();
  const float* bias = ctx.inputs[2]->data<float>();
  float* py = ctx.outputs[0]->data<float>();
  const int64_t n = cg * spatial;
  for (int64_t g = 0; g < N * groups; ++g) {
    const float* xg = px + g * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += xg[i];
    mean /= double(std::max<int64_t>(n, 1));
    for (int64_t i = 0; i < n; ++i) var += (xg[i] - mean) * (xg[i] - mean);
    var /= double(std::max<int64_t>(n, 1));
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = (g % groups) * cg + i / std::max<int64_t>(spatial, 1);
      py[g * n + i] = float((xg[i] - mean) * rstd * scale[c] + bias[c]);
    }
  }
}

// Input i as the node reads it: gathered out of its strided view (ir/strided_view.h), or as it is.
Tensor logical_input(const KernelContext& ctx, int i) {
  const Tensor& t = *ctx.inputs[size_t(i)];
  const std::optional<ir::StridedView> view = ir::input_view(ctx.node, i);
  if (!view) return t;
  const std::string why = ir::check_view(*view, t.numel());
  SEGMUX_CHECK(why.empty(), ctx.node.describe(), ": input ", i, ": ", why);
  SEGMUX_CHECK(t.dtype() == DType::f32, ctx.node.describe(), ": a strided view reads f32 inputs only");
  Tensor out(DType::f32, view->shape);
  std::vector<int64_t> idx(view->shape.size(), 0);
  const float* src = t.data<float>();
  for (int64_t n = 0; n < out.numel(); ++n, next_index(idx, view->shape)) {
    int64_t at = view->offset;
    for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * view->strides[d];
    out.data<float>()[n] = src[at];
  }
  return out;
}

void attention_into(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  const Tensor* mask = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  const int r = q.rank();
  const int64_t Lq = q.dim(-2), D = q.dim(-1), Lk = k.dim(-2), Dv = v.dim(-1);
  const int64_t BH = Lq * D == 0 ? out.numel() / std::max<int64_t>(Lq * Dv, 1) : q.numel() / (Lq * D);
  const double scale =
      ctx.node.has_attr("scale") ? double(ctx.node.attr_float("scale", 1.f)) : 1.0 / std::sqrt(double(D));
  Shape scores_shape = q.shape();
  scores_shape[size_t(r - 1)] = Lk;
  std::vector<double> s(static_cast<size_t>(Lk));
  std::vector<int64_t> idx(size_t(r), 0);
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  float* po = out.data<float>();
  for (int64_t bh = 0; bh < BH; ++bh) {
    for (int64_t i = 0; i < Lq; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < Lk; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(pq[(bh * Lq + i) * D + d]) * pk[(bh * Lk + j) * D + d];
        double val = dot * scale;
        if (mask) {
          // Scores index (batch dims of bh, i, j).
          int64_t rem = bh;
          for (int d = r - 3; d >= 0; --d) {
            idx[size_t(d)] = rem % q.dim(d);
            rem /= q.dim(d);
          }
          idx[size_t(r - 2)] = i;
          idx[size_t(r - 1)] = j;
          const int64_t off = broadcast_offset(mask->shape(), scores_shape, idx);
          if (mask->dtype() == DType::boolean) {
            if (!mask->data<bool>()[off]) val = -INFINITY;
          } else {
            val += mask->data<float>()[off];
          }
        }
        s[size_t(j)] = val;
        mx = std::max(mx, val);
      }
      float* o = po + (bh * Lq + i) * Dv;
      if (mx == -INFINITY) {  // every key masked
        std::fill(o, o + Dv, 0.f);
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < Lk; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      for (int64_t d = 0; d < Dv; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < Lk; ++j) acc += s[size_t(j)] * pv[(bh * Lk + j) * Dv + d];
        o[d] = float(acc / sum);
      }
    }
  }
}

// The logical output, written permuted when the node asks for it (ir::kOutputPerm).
void attention(KernelContext& ctx) {
  const Tensor q = logical_input(ctx, 0), k = logical_input(ctx, 1), v = logical_input(ctx, 2);
  if (!ctx.node.has_attr(ir::kOutputPerm)) return attention_into(ctx, q, k, v, *ctx.outputs[0]);
  const std::vector<int64_t> perm = ctx.node.attr_ints(ir::kOutputPerm);
  const std::string why = ir::check_output_perm(perm, size_t(q.rank()));
  SEGMUX_CHECK(why.empty(), ctx.node.describe(), ": ", why);
  Shape logical = q.shape();
  logical.back() = v.dim(-1);
  Tensor tmp(DType::f32, logical);
  attention_into(ctx, q, k, v, tmp);
  const Tensor permuted = permute(tmp, std::vector<int>(perm.begin(), perm.end()));
  Tensor& out = *ctx.outputs[0];
  SEGMUX_CHECK(permuted.shape() == out.shape(), ctx.node.describe(), ": output ", shape_str(out.shape()),
               " is not the permuted ", shape_str(logical));
  std::memcpy(out.raw(), permuted.raw(), out.nbytes());
}

void rope(KernelContext& ctx) {
  const Tensor x = logical_input(ctx, 0);
  const int64_t L = x.dim(-2), D = x.dim(-1), half = D / 2;
  SEGMUX_CHECK(ctx.inputs[1]->numel() == L * half && ctx.inputs[2]->numel() == L * half, ctx.node.describe(),
               ": cos/sin do not hold L x D/2 values");
  const float* px = x.data<float>();
  const float* c = ctx.inputs[1]->data<float>();
  const float* s = ctx.inputs[2]->data<float>();
  float* py = ctx.outputs[0]->data<float>();
  const int64_t rows = L * D == 0 ? 0 : x.numel() / D;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t l = r % L;
    for (int64_t i = 0; i < half; ++i) {
      const float a = px[r * D + 2 * i], b = px[r * D + 2 * i + 1];
      const float ci = c[l * half + i], si = s[l * half + i];
      // Each product rounded on its own, as the unfused Mul/Sub/Add graph does (no FMA contraction).
      volatile float ac = a * ci, bs = b * si, as = a * si, bc = b * ci;
      py[r * D + 2 * i] = ac - bs;
      py[r * D + 2 * i + 1] = as + bc;
    }
  }
}

// Pointwise: literally the chain it replaced, one reference kernel per step on whole tensors, so the
// fused op's ground truth is the unfused graph's.
class PointwiseChain : public Kernel {
 public:
  explicit PointwiseChain(const KernelInit& init) {
    std::vector<ir::PointwiseStep> steps;
    std::string error;
    SEGMUX_CHECK(ir::parse_pointwise_steps(init.node.attr_string(ir::kPointwiseSteps, ""), &steps, &error),
                 init.node.describe(), ": ", error);
    const ir::TensorType value{DType::f32, init.outputs.at(0).shape, true};
    size_t operand = 0;
    for (const ir::PointwiseStep& step : steps) {
      Step st;
      st.node.op_type = ir::pointwise_onnx_op(step.op);
      st.node.name = init.node.name + "/" + st.node.op_type;
      st.node.outputs = {0};
      std::vector<const ir::TensorType*> types = {&value};
      if (step.binary()) {
        st.operand = ++operand;
        SEGMUX_CHECK(st.operand < init.inputs.size() && init.inputs[st.operand], init.node.describe(),
                     ": missing operand ", st.operand);
        st.operand_first = step.operand_first;
        types.push_back(init.inputs[st.operand]);
        if (st.operand_first) std::swap(types[0], types[1]);
      }
      for (size_t i = 0; i < types.size(); ++i) st.node.inputs.push_back(int(i));
      st.kernel = reference_provider().make(KernelInit{st.node, types, {}, {value}, 1});
      steps_.push_back(std::move(st));
    }
  }

  void run(KernelContext& ctx) override {
    Tensor& y = *ctx.outputs[0];
    Tensor value = *ctx.inputs[0];
    for (size_t i = 0; i < steps_.size(); ++i) {
      Step& st = steps_[i];
      Tensor next = i + 1 == steps_.size() ? y : Tensor(DType::f32, y.shape());
      std::vector<const Tensor*> in = {&value};
      if (st.operand) in.insert(st.operand_first ? in.begin() : in.end(), ctx.inputs[st.operand]);
      KernelContext step_ctx{st.node, in, {&next}, 1};
      st.kernel->run(step_ctx);
      value = next;
    }
  }

 private:
  struct Step {
    ir::Node node;
    size_t operand = 0;  // input index of a binary step's operand, 0 for unary steps
    bool operand_first = false;
    std::unique_ptr<Kernel> kernel;
  };
  std::vector<Step> steps_;
};

}  // namespace

void register_segmux_reference() {
  register_reference_kernel("segmux", "Pointwise",
                            [](const KernelInit& init) { return std::make_unique<PointwiseChain>(init); });
  register_reference_kernel_fn("segmux", "Rope", rope);
  register_reference_kernel_fn("segmux", "Linear", linear);
  register_reference_kernel_fn("segmux", "Gelu", gelu);
  register_reference_kernel_fn("segmux", "GroupNorm", group_norm);
  register_reference_kernel_fn("segmux", "Attention", attention);
}

}  // namespace segmux::ref
