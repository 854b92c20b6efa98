// Conv and ConvTranspose (1-D/2-D/3-D, groups, strides, dilations, pads, output_padding) on oneDNN.
// The constant weight is reordered once into the layout oneDNN prefers and kept; each distinct input
// shape gets one primitive with its own activation reorder buffers and scratchpad, allocated once.
// bf16 (segmux_precision = "bf16"): bf16 weights and source, f32 accumulation and output. Where oneDNN
// has no bf16 convolution for this CPU (no AVX-512), the same numbers in f32: the weight and source
// rounded to bf16 values (products stay exact in f32), instead of the much slower reference kernel.
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "ir/precision.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_common.h"

namespace segmux::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;

struct ConvConfig {
  bool transposed = false;
  int64_t group = 1;
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, output_padding;
  std::string auto_pad = "NOTSET";
  Tensor weight;
  Tensor bias_const;
  int bias_input = -1;
  bool bf16 = false;
  bool last_in = false, last_out = false;  // segmux Conv: [N, H, W, C] input / output
};

// Logical NCHW dims of a 4-D shape stored channels-last ([N, H, W, C]).
memory::dims nchw_dims(const Shape& s, bool channels_last) {
  if (!channels_last) return to_dims(s);
  return {s[0], s[3], s[1], s[2]};
}

struct ConvPlan {
  bool ok = false;
  dnnl::primitive prim;
  memory::desc src_user, dst_user, bias_md;
  memory::desc src_md, dst_md, scratch_md;  // on the shared run workspace (onednn_common.h)
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_reorder, dst_reorder;
  std::shared_ptr<memory> packed;
  bool emulate_bf16 = false;  // f32 primitive on bf16-rounded values
  Tensor rounded_src;
};

class ConvKernel : public Kernel {
 public:
  ConvKernel(ConvConfig cfg, std::unique_ptr<Kernel> fallback)
      : cfg_(std::move(cfg)), fallback_(std::move(fallback)), weight_(cfg_.weight) {}

  // Prepacks for a shape known at load time.
  void prepare(const Shape& x, const Shape& y) { plan_for(x, y); }

  size_t prepacked_bytes() const override { return weight_.bytes(); }

  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    if (y.numel() == 0) return;
    if (x.numel() == 0) return run_fallback(fallback_, ctx);
    ConvPlan& p = plan_for(x.shape(), y.shape());
    if (!p.ok) return run_fallback(fallback_, ctx);
    set_run_threads(ctx.num_threads);
    dnnl::stream s(cpu_engine());
    const void* src_data = x.raw();
    if (p.emulate_bf16) {
      if (!p.rounded_src.defined() || p.rounded_src.numel() != x.numel()) p.rounded_src = Tensor(DType::f32, x.shape());
      round_to_bf16_values(x.data<float>(), p.rounded_src.data<float>(), x.numel(), ctx.num_threads);
      src_data = p.rounded_src.raw();
    }
    memory src(p.src_user, cpu_engine(), const_cast<void*>(src_data));
    memory dst(p.dst_user, cpu_engine(), y.raw());
    memory src_buf = p.reorder_src ? workspace_memory(WorkSlot::src, p.src_md) : src;
    memory dst_buf = p.reorder_dst ? workspace_memory(WorkSlot::dst, p.dst_md) : dst;
    if (p.reorder_src) p.src_reorder.execute(s, src, src_buf);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_buf},
                                         {DNNL_ARG_WEIGHTS, *p.packed},
                                         {DNNL_ARG_DST, dst_buf},
                                         {DNNL_ARG_SCRATCHPAD, workspace_memory(WorkSlot::scratch, p.scratch_md)}};
    if (cfg_.bias_const.defined()) {
      args[DNNL_ARG_BIAS] = memory(p.bias_md, cpu_engine(), const_cast<void*>(cfg_.bias_const.raw()));
    } else if (cfg_.bias_input >= 0 && size_t(cfg_.bias_input) < ctx.inputs.size() &&
               ctx.inputs[size_t(cfg_.bias_input)]) {
      const Tensor& b = *ctx.inputs[size_t(cfg_.bias_input)];
      const int64_t oc = cfg_.last_out ? y.dim(3) : y.dim(1);
      SEGMUX_CHECK(b.numel() == oc, ctx.node.describe(), ": bias has ", b.numel(), " values for ", oc,
                   " output channels");
      args[DNNL_ARG_BIAS] = memory(p.bias_md, cpu_engine(), const_cast<void*>(b.raw()));
    }
    p.prim.execute(s, args);
    if (p.reorder_dst) p.dst_reorder.execute(s, dst_buf, dst);
    s.wait();
  }

 private:
  ConvPlan& plan_for(const Shape& x, const Shape& y) {
    auto key = std::make_pair(x, y);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    ConvPlan& p = plans_[key];
    if (winograd_eligible(x, y)) {
      try {
        build(p, x, y, false, true);
        p.ok = true;
      } catch (const dnnl::error&) {
        p = ConvPlan();
      }
    }
    if (!p.ok) {
      try {
        build(p, x, y, false);
        p.ok = true;
      } catch (const dnnl::error&) {
        p.ok = false;
      }
    }
    if (!p.ok && cfg_.bf16) {
      try {
        build(p, x, y, true);
        p.ok = true;
      } catch (const dnnl::error&) {
        p.ok = false;
      }
    }
    return p;
  }

  // 3x3 stride-1 f32 convolutions with many channels on a large map (the detector's pixel decoder,
  // the backbone's neck) run as Winograd F(4x4, 3x3) where oneDNN has it: ~2.4x faster than direct
  // (4x fewer multiplications); the transforms round differently (tests/kernels_cpu: vs the reference
  // within the direct kernel's tolerance scaled by the transform's error growth). bf16 nodes take it too,
  // in f32: faster than oneDNN's direct bf16 kernel there (full-size neck, 288x288x256: 200 vs 283 ms) and
  // more precise. SEGMUX_CONV_WINOGRAD=0 turns it off.
  bool winograd_eligible(const Shape& x_stored, const Shape& y_stored) const {
    static const bool enabled = [] {
      const char* e = std::getenv("SEGMUX_CONV_WINOGRAD");
      return !(e && std::string(e) == "0");
    }();
    if (!enabled || cfg_.transposed || cfg_.group != 1 || cfg_.kernel != std::vector<int64_t>{3, 3} ||
        cfg_.strides != std::vector<int64_t>{1, 1} || cfg_.dilations != std::vector<int64_t>{1, 1})
      return false;
    const memory::dims x = nchw_dims(x_stored, cfg_.last_in), y = nchw_dims(y_stored, cfg_.last_out);
    return x.size() == 4 && x[1] % 16 == 0 && y[1] % 16 == 0 && x[1] >= 64 && y[1] >= 64 && y[2] * y[3] >= 1024;
  }

  void build(ConvPlan& p, const Shape& x_stored, const Shape& y_stored, bool emulate_bf16, bool winograd = false) {
    const memory::dims xd = nchw_dims(x_stored, cfg_.last_in), yd = nchw_dims(y_stored, cfg_.last_out);
    const Shape x(xd.begin(), xd.end()), y(yd.begin(), yd.end());
    const size_t ns = x.size() - 2;
    if (y.size() != x.size() || cfg_.kernel.size() != ns) throw dnnl::error(dnnl_invalid_arguments, "rank");
    const dt compute = cfg_.bf16 && !emulate_bf16 && !winograd ? dt::bf16 : dt::f32;
    p.emulate_bf16 = emulate_bf16;
    memory::dims strides, dil, pl, pr;
    for (size_t i = 0; i < ns; ++i) {
      const int64_t in = x[2 + i], out = y[2 + i], k = cfg_.kernel[i], s = cfg_.strides[i], d = cfg_.dilations[i];
      const int64_t ext = (k - 1) * d + 1;
      int64_t begin = cfg_.pads_begin[i];
      if (!cfg_.transposed && (cfg_.auto_pad == "SAME_UPPER" || cfg_.auto_pad == "SAME_LOWER")) {
        int64_t total = std::max<int64_t>(0, (out - 1) * s + ext - in);
        begin = cfg_.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else if (cfg_.auto_pad == "VALID") {
        begin = 0;
      }
      strides.push_back(s);
      dil.push_back(d - 1);
      pl.push_back(begin);
      // Right padding that makes oneDNN's size formula give exactly the output size we were given.
      pr.push_back(cfg_.transposed ? (in - 1) * s + ext - begin - out : (out - 1) * s + ext - in - begin);
    }
    const int64_t OC = y[1], IC = x[1], g = cfg_.group;
    memory::dims wdims;
    if (g > 1)
      wdims = {g, OC / g, IC / g};
    else
      wdims = {OC, IC};
    for (int64_t k : cfg_.kernel) wdims.push_back(k);
    memory::desc wei_user;
    if (!cfg_.transposed) {
      wei_user = plain_md(wdims, dt::f32);  // ONNX [OC, IC/g, k...] == (g, oc, ic, k...) contiguous
    } else {
      // ONNX ConvTranspose weight is [IC, OC/g, k...]: element (g, oc, ic, k) lives at
      // ((g*ICg + ic)*OCg + oc)*KS + k.
      int64_t ks = 1;
      for (int64_t k : cfg_.kernel) ks *= k;
      const int64_t ocg = OC / g, icg = IC / g;
      memory::dims st;
      if (g > 1)
        st = {icg * ocg * ks, ks, ocg * ks};
      else
        st = {ks, ocg * ks};
      memory::dims kst(ns, 1);
      for (size_t i = ns; i-- > 1;) kst[i - 1] = kst[i] * cfg_.kernel[i];
      st.insert(st.end(), kst.begin(), kst.end());
      wei_user = memory::desc(wdims, dt::f32, st);
    }
    p.src_user = cfg_.last_in ? memory::desc(xd, dt::f32, memory::format_tag::nhwc) : plain_md(xd, dt::f32);
    p.dst_user = cfg_.last_out ? memory::desc(yd, dt::f32, memory::format_tag::nhwc) : plain_md(yd, dt::f32);
    p.bias_md = plain_md({OC}, dt::f32);
    memory::desc src_any(xd, compute, memory::format_tag::any);
    memory::desc dst_any(yd, dt::f32, memory::format_tag::any);
    memory::desc wei_any(wdims, compute, memory::format_tag::any);
    const bool has_bias = cfg_.bias_const.defined() || cfg_.bias_input >= 0;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    memory::desc src_md, dst_md, wei_md, scratch_md;
    if (!cfg_.transposed) {
      const auto alg = winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
      auto d = has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src_any, wei_any,
                                                          p.bias_md, dst_any, strides, dil, pl, pr)
                        : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src_any, wei_any,
                                                          dst_any, strides, dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
      p.prim = dnnl::convolution_forward(pd);
      src_md = pd.src_desc();
      dst_md = pd.dst_desc();
      wei_md = pd.weights_desc();
      scratch_md = pd.scratchpad_desc();
    } else {
      auto d = has_bias ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::deconvolution_direct, src_any, wei_any,
                                                            p.bias_md, dst_any, strides, dil, pl, pr)
                        : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::deconvolution_direct, src_any, wei_any,
                                                            dst_any, strides, dil, pl, pr);
      dnnl::deconvolution_forward::primitive_desc pd(d, attr, cpu_engine());
      p.prim = dnnl::deconvolution_forward(pd);
      src_md = pd.src_desc();
      dst_md = pd.dst_desc();
      wei_md = pd.weights_desc();
      scratch_md = pd.scratchpad_desc();
    }
    p.scratch_md = scratch_md;
    p.src_md = src_md;
    p.dst_md = dst_md;
    p.reorder_src = src_md != p.src_user;
    if (p.reorder_src)
      p.src_reorder = dnnl::reorder(memory(p.src_user, cpu_engine(), nullptr), memory(src_md, cpu_engine(), nullptr));
    p.reorder_dst = dst_md != p.dst_user;
    if (p.reorder_dst)
      p.dst_reorder = dnnl::reorder(memory(dst_md, cpu_engine(), nullptr), memory(p.dst_user, cpu_engine(), nullptr));
    p.packed = weight_.get(wei_user, wei_md, emulate_bf16);
  }

  ConvConfig cfg_;
  std::unique_ptr<Kernel> fallback_;
  PackedWeight weight_;
  std::map<std::pair<Shape, Shape>, ConvPlan> plans_;
};

}  // namespace

bool onednn_has_winograd() {
  static const bool has = [] {
    try {
      const memory::desc x({1, 64, 36, 36}, dt::f32, memory::format_tag::any);
      const memory::desc w({64, 64, 3, 3}, dt::f32, memory::format_tag::any);
      const memory::desc y({1, 64, 36, 36}, dt::f32, memory::format_tag::any);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, x, w,
                                        y, {1, 1}, {0, 0}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc pd(d, cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

namespace {

std::unique_ptr<Kernel> make_conv_common(const KernelInit& init, bool transposed) {
  if (init.inputs.size() < 2 || !init.inputs[0] || !init.inputs[1]) return nullptr;
  const bool segmux_conv = init.node.domain == "segmux";
  for (auto* t : init.inputs)
    if (t && t->dtype != DType::f32) return nullptr;
  const Tensor* w = init.constants[1];
  if (!w || w->rank() < 3 || w->rank() > 5) return nullptr;
  const ir::Node& n = init.node;
  ConvConfig cfg;
  cfg.transposed = transposed;
  cfg.group = n.attr_int("group", 1);
  const size_t ns = size_t(w->rank() - 2);
  cfg.kernel.assign(w->shape().begin() + 2, w->shape().end());
  if (n.has_attr("kernel_shape") && n.attr_ints("kernel_shape") != cfg.kernel) return nullptr;
  cfg.strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  cfg.dilations = n.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  cfg.auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (cfg.strides.size() != ns || cfg.dilations.size() != ns || pads.size() != 2 * ns || cfg.group < 1) return nullptr;
  cfg.pads_begin.assign(pads.begin(), pads.begin() + long(ns));
  cfg.pads_end.assign(pads.begin() + long(ns), pads.end());
  if (transposed) {
    // Output shape / auto_pad conventions of ConvTranspose stay with the reference kernel.
    if (n.has_attr("output_shape") || cfg.auto_pad != "NOTSET") return nullptr;
    cfg.output_padding = n.attr_ints("output_padding", std::vector<int64_t>(ns, 0));
  }
  if (cfg.auto_pad != "NOTSET" && cfg.auto_pad != "VALID" && cfg.auto_pad != "SAME_UPPER" &&
      cfg.auto_pad != "SAME_LOWER")
    return nullptr;
  cfg.weight = *w;
  cfg.bf16 = ir::wants_bf16(n);
  if (segmux_conv) {
    if (w->rank() != 4) return nullptr;
    cfg.last_in = n.attr_int("channels_last_in", 0) != 0;
    cfg.last_out = n.attr_int("channels_last_out", 0) != 0;
  }
  if (init.inputs.size() > 2 && init.inputs[2]) {
    if (init.constants[2])
      cfg.bias_const = *init.constants[2];
    else
      cfg.bias_input = 2;
  }
  auto k = std::make_unique<ConvKernel>(std::move(cfg), reference_fallback(init));
  if (shape_known(init.inputs[0]) && !init.outputs.empty() && init.outputs[0].has_shape) {
    bool known = true;
    for (int64_t d : init.outputs[0].shape) known &= d >= 0;
    if (known && shape_numel(init.inputs[0]->shape) > 0) k->prepare(init.inputs[0]->shape, init.outputs[0].shape);
  }
  return k;
}

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelInit& init) { return make_conv_common(init, false); }
std::unique_ptr<Kernel> make_conv_transpose(const KernelInit& init) {
  if (auto k = make_deconv_gemm(init)) return k;
  return make_conv_common(init, true);
}

}  // namespace segmux::cpu
