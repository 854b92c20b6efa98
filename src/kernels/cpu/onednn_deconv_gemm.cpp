// ConvTranspose whose kernel equals its stride (no padding, dilation or groups: the neck's 2x2 stride-2
// upsampling), f32 or bf16, as one GEMM: every input pixel writes its own kh x kw output block, so
//   Y[(oc, i, j), p] = sum_c W[c, oc, i, j] X[c, p]     (p = h * W + w, per image)
//   out[oc, h * kh + i, w * kw + j] = Y[(oc, i, j), p] + bias[oc].
// W^T [OC kh kw, C] is the constant matmul source (packed once at load), the image X [C, H W] is the
// matmul weight (reordered, in bf16 converted, into oneDNN's blocked layout per run, no transpose),
// and the f32 product is scattered into NCHW with the bias. oneDNN's deconvolutions run these shapes
// well below the rate of its brgemm matmul (bf16 jit_bf16 about half; f32 ~65 % of it at full size),
// plus blocked-layout reorders on both sides. Only where oneDNN has a non-reference matmul of that
// precision for this CPU; elsewhere the caller keeps the deconvolution.
#include "ir/precision.h"
#include "kernels/cpu/onednn_common.h"

namespace segmux::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;

struct DeconvGemmShape {
  int64_t N, C, OC, H, W, kh, kw;
};

class DeconvGemm : public Kernel {
 public:
  DeconvGemm(const DeconvGemmShape& s, const Tensor& weight, Tensor bias, int bias_input, bool bf16)
      : s_(s), bias_(std::move(bias)), bias_input_(bias_input), weight_(weight) {
    const int64_t R = s.OC * s.kh * s.kw, P = s.H * s.W;
    const dt compute = bf16 ? dt::bf16 : dt::f32;
    a_md_ = plain_md({R, s.C}, compute);
    x_md_ = plain_md({s.C, P}, dt::f32);
    y_md_ = plain_md({R, P}, dt::f32);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    memory::desc b_any({s.C, P}, compute, memory::format_tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md_, b_any, y_md_), attr, cpu_engine());  // throws if none
    // oneDNN's reference matmul exists everywhere and is far slower than its deconvolution.
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) throw dnnl::error(dnnl_unimplemented, "reference matmul");
    prim_ = dnnl::matmul(pd);
    b_md_ = pd.weights_desc();
    scratch_md_ = pd.scratchpad_desc();
    x_reorder_ = dnnl::reorder(memory(x_md_, cpu_engine(), nullptr), memory(b_md_, cpu_engine(), nullptr));
    // ONNX weight [C, OC, kh, kw] = [C, R] row-major: W^T is its transposed view.
    a_ = weight_.get(memory::desc({R, s.C}, dt::f32, memory::dims{1, R}), a_md_);
  }

  size_t prepacked_bytes() const override { return weight_.bytes(); }

  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    SEGMUX_CHECK(x.numel() == s_.N * s_.C * s_.H * s_.W && y.numel() == s_.N * s_.OC * s_.H * s_.kh * s_.W * s_.kw,
                 ctx.node.describe(), ": shapes differ from the compiled ones");
    const float* bias = bias_.defined() ? bias_.data<float>() : nullptr;
    if (!bias && bias_input_ >= 0 && size_t(bias_input_) < ctx.inputs.size() && ctx.inputs[size_t(bias_input_)]) {
      const Tensor& b = *ctx.inputs[size_t(bias_input_)];
      SEGMUX_CHECK(b.numel() == s_.OC, ctx.node.describe(), ": bias has ", b.numel(), " values for ", s_.OC,
                   " output channels");
      bias = b.data<float>();
    }
    set_run_threads(ctx.num_threads);
    dnnl::stream st(cpu_engine());
    const int64_t P = s_.H * s_.W;
    memory xb = workspace_memory(WorkSlot::src, b_md_);
    memory yw = workspace_memory(WorkSlot::dst, y_md_);
    for (int64_t n = 0; n < s_.N; ++n) {
      memory xn(x_md_, cpu_engine(), const_cast<float*>(x.data<float>() + n * s_.C * P));
      x_reorder_.execute(st, xn, xb);
      prim_.execute(st, {{DNNL_ARG_SRC, *a_},
                         {DNNL_ARG_WEIGHTS, xb},
                         {DNNL_ARG_DST, yw},
                         {DNNL_ARG_SCRATCHPAD, workspace_memory(WorkSlot::scratch, scratch_md_)}});
      st.wait();
      scatter(static_cast<const float*>(yw.get_data_handle()), bias, y.data<float>() + n * s_.OC * P * s_.kh * s_.kw,
              ctx.num_threads);
    }
  }

 private:
  // out[oc, h kh + i, w kw + j] = Y[(oc, i, j), h W + w] + bias[oc], one output row (oc, h, i) at a time.
  void scatter(const float* Y, const float* bias, float* out, int num_threads) const {
    const int64_t H = s_.H, W = s_.W, kh = s_.kh, kw = s_.kw, P = H * W, Wo = W * kw;
    parallel_chunks(s_.OC * H, num_threads, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t oc = r / H, h = r % H;
        const float add = bias ? bias[oc] : 0.f;
        for (int64_t i = 0; i < kh; ++i) {
          float* dst = out + (oc * H * kh + h * kh + i) * Wo;
          const float* src = Y + (oc * kh + i) * kw * P + h * W;
          if (kw == 2) {
            const float *s0 = src, *s1 = src + P;
            for (int64_t w = 0; w < W; ++w) {
              dst[2 * w] = s0[w] + add;
              dst[2 * w + 1] = s1[w] + add;
            }
            continue;
          }
          for (int64_t j = 0; j < kw; ++j)
            for (int64_t w = 0; w < W; ++w) dst[w * kw + j] = src[j * P + w] + add;
        }
      }
    });
  }

  DeconvGemmShape s_;
  Tensor bias_;
  int bias_input_;
  PackedWeight weight_;
  memory::desc a_md_, x_md_, y_md_, b_md_, scratch_md_;
  dnnl::matmul prim_;
  dnnl::reorder x_reorder_;
  std::shared_ptr<memory> a_;
};

}  // namespace

std::unique_ptr<Kernel> make_deconv_gemm(const KernelInit& init) {
  const ir::Node& n = init.node;
  if (init.inputs.size() < 2 || !shape_known(init.inputs[0]) || init.outputs.empty()) return nullptr;
  for (auto* t : init.inputs)
    if (t && t->dtype != DType::f32) return nullptr;
  const Tensor* w = init.constants[1];
  const Shape& xs = init.inputs[0]->shape;
  if (!w || w->dtype() != DType::f32 || (w->rank() != 3 && w->rank() != 4) || size_t(w->rank()) != xs.size())
    return nullptr;
  const size_t ns = xs.size() - 2;
  const std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  if (n.attr_int("group", 1) != 1 || n.has_attr("output_shape") || n.attr_string("auto_pad", "NOTSET") != "NOTSET" ||
      n.attr_ints("strides", std::vector<int64_t>(ns, 1)) != kernel ||
      n.attr_ints("dilations", std::vector<int64_t>(ns, 1)) != std::vector<int64_t>(ns, 1) ||
      n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0)) != std::vector<int64_t>(2 * ns, 0) ||
      n.attr_ints("output_padding", std::vector<int64_t>(ns, 0)) != std::vector<int64_t>(ns, 0) ||
      (n.has_attr("kernel_shape") && n.attr_ints("kernel_shape") != kernel))
    return nullptr;
  DeconvGemmShape s{xs[0], xs[1], w->dim(1), ns == 2 ? xs[2] : 1, xs.back(), ns == 2 ? kernel[0] : 1, kernel.back()};
  if (w->dim(0) != s.C || s.N * s.C * s.H * s.W == 0 || s.OC == 0) return nullptr;
  Tensor bias;
  int bias_input = -1;
  if (init.inputs.size() > 2 && init.inputs[2]) {
    if (init.constants[2])
      bias = *init.constants[2];
    else
      bias_input = 2;
    if (bias.defined() && bias.numel() != s.OC) return nullptr;
  }
  try {
    return std::make_unique<DeconvGemm>(s, *w, bias, bias_input, ir::wants_bf16(n));
  } catch (const dnnl::error&) {
    return nullptr;  // no fast matmul of this precision here: the deconvolution (emulating bf16 if asked)
  }
}

}  // namespace segmux::cpu
