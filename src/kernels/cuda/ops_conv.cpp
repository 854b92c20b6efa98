// Convolutions on the CUDA provider as GEMMs on cuBLASLt: Conv and segmux Conv (NCHW or NHWC in and out)
// through our im2col kernel and one strided-batched GEMM over the groups; ConvTranspose with kernel ==
// stride (the candidates' upsampling) as one GEMM and a scatter, as the CPU path does. The im2col buffer
// and GEMM scratch are allocated once, at kernel creation (shapes are static). cuDNN (NHWC, fused bias)
// is the planned replacement for the im2col path once a GPU can measure both.
#include "ir/precision.h"
#include "ir/schemas/shape_math.h"
#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda::ops {

namespace {

GemmMode gemm_mode(const ir::Node& n, Fp32Gemm fp32) {
  if (ir::wants_bf16(n)) return GemmMode::bf16;
  return fp32 == Fp32Gemm::tf32 ? GemmMode::tf32 : GemmMode::fp32;
}

std::shared_ptr<DeviceBuffer> upload_weights(const Tensor& host, GemmMode mode) {
  Tensor t = mode == GemmMode::bf16 ? host.cast(DType::bf16) : host;
  auto buf = std::make_shared<DeviceBuffer>(t.nbytes());
  Stream s = current_stream();
  check_cuda(copy_to_device(buf->data(), t.raw(), t.nbytes(), s), "uploading conv weights");
  check_cuda(stream_sync(s), "uploading conv weights");
  return buf;
}

// The activations of a bf16 GEMM: converted per run into this buffer.
const void* gemm_input(const void* f32, int64_t count, GemmMode mode, DeviceBuffer* bf16, Stream s) {
  if (mode != GemmMode::bf16) return f32;
  check_cuda(launch_cast(ScalarKind::f32, ScalarKind::bf16, f32, bf16->data(), count, s), "bf16 input");
  return bf16->data();
}

void add_bias(Tensor& y, const Tensor& bias, const Shape& bias_shape, Stream s) {
  PointwiseProgram p;
  p.count = 1;
  p.step[0] = Step::add;
  float* d = static_cast<float*>(y.raw());
  const float* in[2] = {d, static_cast<const float*>(bias.raw())};
  check_cuda(launch_pointwise(p, make_broadcast(y.shape(), {y.shape(), bias_shape}), 2, in, d, y.numel(), s), "bias");
}

struct ConvGeometry {
  bool last_in = false, last_out = false;
  Shape nchw;  // the input in NCHW order
  int64_t m = 0, groups = 1, kh = 0, kw = 0;
  ir::shape_math::Window win;
};

ConvGeometry conv_geometry(const KernelInit& init) {
  ConvGeometry g;
  const Shape& x = init.inputs[0]->shape;
  const Shape& w = init.inputs[1]->shape;
  g.last_in = init.node.attr_int("channels_last_in", 0) != 0;
  g.last_out = init.node.attr_int("channels_last_out", 0) != 0;
  g.nchw = g.last_in ? Shape{x[0], x[3], x[1], x[2]} : x;
  g.m = w[0];
  g.groups = init.node.attr_int("group", 1);
  g.kh = w[2];
  g.kw = w[3];
  g.win = ir::shape_math::conv_window(init.node, g.nchw, {g.kh, g.kw}, false);
  return g;
}

std::string conv_check(const KernelInit& init) {
  if (!inputs_are(init, DType::f32)) return dtype_reason(init, "f32");
  if (init.inputs[0]->shape.size() != 4 || init.inputs[1]->shape.size() != 4) return "the CUDA Conv is 2-D only";
  if (!in_const(init, 1)) return "the CUDA Conv needs constant weights (rearranged once at load)";
  return "";
}

class ConvKernel : public Kernel {
 public:
  ConvKernel(const KernelInit& init, Fp32Gemm fp32) {
    const ConvGeometry g = conv_geometry(init);
    const int64_t n = g.nchw[0], c = g.nchw[1], h = g.nchw[2], w = g.nchw[3];
    const int64_t oh = g.win.out[0], ow = g.win.out[1], cg = c / g.groups, mg = g.m / g.groups;
    ic_ = Im2Col{n,
                 cg,
                 g.groups,
                 h,
                 w,
                 g.kh,
                 g.kw,
                 oh,
                 ow,
                 g.win.strides[0],
                 g.win.strides[1],
                 g.win.pad_begin[0],
                 g.win.pad_begin[1],
                 g.win.dilations[0],
                 g.win.dilations[1]};
    ic_.xs_n = c * h * w;
    ic_.xs_c = g.last_in ? 1 : h * w;
    ic_.xs_h = g.last_in ? w * c : w;
    ic_.xs_w = g.last_in ? c : 1;
    const int64_t p = n * oh * ow, k = cg * g.kh * g.kw;
    gemm_.m = p;
    gemm_.k = k;
    gemm_.n = mg;
    gemm_.batch = g.groups;
    gemm_.stride_a = p * k;
    gemm_.stride_w = k * mg;
    gemm_.stride_d = p * mg;
    gemm_.mode = gemm_mode(init.node, fp32);
    col_elems_ = g.groups * p * k;
    // W [M, Cg, kh, kw] -> per group W^T [Cg*kh*kw, Mg] (the GEMM's [K, N]).
    const Tensor& wt = *in_const(init, 1);
    Tensor packed(DType::f32, {g.groups, k, mg});
    const Tensor w32 = wt.cast(DType::f32);
    for (int64_t gi = 0; gi < g.groups; ++gi)
      for (int64_t mi = 0; mi < mg; ++mi)
        for (int64_t ki = 0; ki < k; ++ki)
          packed.data<float>()[(gi * k + ki) * mg + mi] = w32.data<float>()[(gi * mg + mi) * k + ki];
    w_ = upload_weights(packed, gemm_.mode);
    col_ = std::make_shared<DeviceBuffer>(size_t(col_elems_) * 4);
    if (gemm_.mode == GemmMode::bf16) col16_ = std::make_shared<DeviceBuffer>(size_t(col_elems_) * 2);
    has_bias_ = in_type(init, 2) != nullptr;
    direct_ = g.groups == 1 && g.last_out;  // the GEMM's [P, M] rows are the NHWC output itself
    if (!direct_) {
      d_ = std::make_shared<DeviceBuffer>(size_t(g.groups * p * mg) * 4);
      // [g, N, OH*OW, Mg] -> the output layout.
      const int64_t s = oh * ow;
      scatter_.rank = 4;
      const int64_t dims[4] = {g.groups, n, s, mg};
      const int64_t in_st[4] = {p * mg, s * mg, mg, 1};
      const int64_t out_nhwc[4] = {mg, s * g.m, g.m, 1}, out_nchw[4] = {mg * s, g.m * s, 1, s};
      for (int d = 0; d < 4; ++d) {
        scatter_.dims[d] = dims[d];
        scatter_.in_strides[d] = in_st[d];
        scatter_.out_strides[d] = g.last_out ? out_nhwc[d] : out_nchw[d];
      }
    }
    bias_shape_ = g.last_out ? Shape{g.m} : Shape{g.m, 1, 1};
  }

  void run(KernelContext& ctx) override {
    try {
      launch(ctx, current_stream());
    } catch (const Error& e) {
      fail(ctx.node.describe(), " (CUDA conv): ", e.what());
    }
  }

  size_t prepacked_bytes() const override { return w_->bytes(); }

 private:
  void launch(KernelContext& ctx, Stream s) {
    Tensor& y = *ctx.outputs[0];
    const Tensor* bias = has_bias_ ? ctx.inputs[2] : nullptr;
    check_cuda(
        cuda::launch_im2col(ic_, static_cast<const float*>(ctx.inputs[0]->raw()), static_cast<float*>(col_->data()), s),
        "im2col");
    const void* a = gemm_input(col_->data(), col_elems_, gemm_.mode, col16_.get(), s);
    float* d = direct_ ? static_cast<float*>(y.raw()) : static_cast<float*>(d_->data());
    const float* b = direct_ && bias ? static_cast<const float*>(bias->raw()) : nullptr;
    check_cuda(launch_gemm(gemm_, a, w_->data(), b, nullptr, d, s), "cuBLASLt");
    if (direct_) return;
    check_cuda(launch_strided_copy(scatter_, d_->data(), y.raw(), 4, s), "output layout");
    if (bias) add_bias(y, *bias, bias_shape_, s);
  }

  Im2Col ic_;
  GemmShape gemm_;
  int64_t col_elems_ = 0;
  StridedCopy scatter_;
  bool has_bias_ = false, direct_ = false;
  Shape bias_shape_;
  std::shared_ptr<DeviceBuffer> w_, col_, col16_, d_;
};

// ConvTranspose with kernel == stride, no pads, dilation 1, group 1: every output pixel comes from
// exactly one input pixel and one kernel tap.
std::string deconv_check(const KernelInit& init) {
  if (!inputs_are(init, DType::f32)) return dtype_reason(init, "f32");
  const Shape& w = init.inputs[1]->shape;
  if (init.inputs[0]->shape.size() != 4 || w.size() != 4) return "the CUDA ConvTranspose is 2-D only";
  const ir::Node& n = init.node;
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v)
      if (e != x) return false;
    return true;
  };
  const std::vector<int64_t> strides = n.attr_ints("strides", {1, 1});
  if (n.attr_int("group", 1) != 1 || strides.size() != 2 || strides[0] != w[2] || strides[1] != w[3] ||
      !all(n.attr_ints("pads", {}), 0) || !all(n.attr_ints("dilations", {}), 1) ||
      !all(n.attr_ints("output_padding", {}), 0) || n.has_attr("output_shape") ||
      n.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return "the CUDA ConvTranspose takes kernel == stride, no pads, dilation 1, group 1 only";
  return "";
}

class DeconvKernel : public Kernel {
 public:
  DeconvKernel(const KernelInit& init, Fp32Gemm fp32) {
    const Shape& x = init.inputs[0]->shape;
    const Shape& w = init.inputs[1]->shape;
    const int64_t n = x[0], c = x[1], h = x[2], wd = x[3], m = w[1], kh = w[2], kw = w[3];
    gemm_.m = n * h * wd;
    gemm_.k = c;
    gemm_.n = m * kh * kw;
    gemm_.mode = gemm_mode(init.node, fp32);
    // NCHW -> NHWC rows for the GEMM's A.
    to_rows_.rank = 4;
    const int64_t tdims[4] = {n, h, wd, c}, tin[4] = {c * h * wd, wd, 1, h * wd}, tout[4] = {h * wd * c, wd * c, c, 1};
    // The GEMM's [N*H*W, M*kh*kw] rows -> out [N, M, H*kh, W*kw], dims (n, m, y, i, x, j).
    scatter_.rank = 6;
    const int64_t cols = m * kh * kw, oh = h * kh, ow = wd * kw;
    const int64_t sdims[6] = {n, m, h, kh, wd, kw};
    const int64_t sin[6] = {h * wd * cols, kh * kw, wd * cols, kw, cols, 1};
    const int64_t sout[6] = {m * oh * ow, oh * ow, kh * ow, ow, kw, 1};
    for (int d = 0; d < 4; ++d) {
      to_rows_.dims[d] = tdims[d];
      to_rows_.in_strides[d] = tin[d];
      to_rows_.out_strides[d] = tout[d];
    }
    for (int d = 0; d < 6; ++d) {
      scatter_.dims[d] = sdims[d];
      scatter_.in_strides[d] = sin[d];
      scatter_.out_strides[d] = sout[d];
    }
    rows_ = std::make_shared<DeviceBuffer>(size_t(gemm_.m * c) * 4);
    d_ = std::make_shared<DeviceBuffer>(size_t(gemm_.m * cols) * 4);
    if (gemm_.mode == GemmMode::bf16) {
      rows16_ = std::make_shared<DeviceBuffer>(size_t(gemm_.m * c) * 2);
      w16_ = std::make_shared<DeviceBuffer>(size_t(c * cols) * 2);
      if (const Tensor* wt = in_const(init, 1)) {
        w16_ = upload_weights(*wt, GemmMode::bf16);
        w_converted_ = true;
      }
    }
    has_bias_ = in_type(init, 2) != nullptr;
    bias_shape_ = Shape{m, 1, 1};
  }

  void run(KernelContext& ctx) override {
    try {
      launch(ctx, current_stream());
    } catch (const Error& e) {
      fail(ctx.node.describe(), " (CUDA ConvTranspose): ", e.what());
    }
  }

 private:
  void launch(KernelContext& ctx, Stream s) {
    Tensor& y = *ctx.outputs[0];
    check_cuda(launch_strided_copy(to_rows_, ctx.inputs[0]->raw(), rows_->data(), 4, s), "NHWC rows");
    const void* a = gemm_input(rows_->data(), gemm_.m * gemm_.k, gemm_.mode, rows16_.get(), s);
    const void* w = ctx.inputs[1]->raw();
    if (gemm_.mode == GemmMode::bf16) {
      if (!w_converted_)
        check_cuda(launch_cast(ScalarKind::f32, ScalarKind::bf16, w, w16_->data(), gemm_.k * gemm_.n, s), "bf16 W");
      w = w16_->data();
    }
    check_cuda(launch_gemm(gemm_, a, w, nullptr, nullptr, static_cast<float*>(d_->data()), s), "cuBLASLt");
    check_cuda(launch_strided_copy(scatter_, d_->data(), y.raw(), 4, s), "scatter");
    if (has_bias_) add_bias(y, *ctx.inputs[2], bias_shape_, s);
  }

  GemmShape gemm_;
  StridedCopy to_rows_, scatter_;
  bool has_bias_ = false, w_converted_ = false;
  Shape bias_shape_;
  std::shared_ptr<DeviceBuffer> rows_, rows16_, w16_, d_;
};

}  // namespace

void add_conv_ops(OpTable& t) {
  auto conv = [](const KernelInit& init, Fp32Gemm fp32) -> std::unique_ptr<Kernel> {
    return std::make_unique<ConvKernel>(init, fp32);
  };
  t["Conv"] = {conv_check, conv};
  t["segmux.Conv"] = {conv_check, conv};
  t["ConvTranspose"] = {deconv_check, [](const KernelInit& init, Fp32Gemm fp32) -> std::unique_ptr<Kernel> {
                          return std::make_unique<DeconvKernel>(init, fp32);
                        }};
}

}  // namespace segmux::cuda::ops
