// MatMul, Gemm and segmux Linear on oneDNN.
//
// Weight-stationary case (the weight is a constant 2-D [K, N], or [N, K] for Gemm transB): the weight
// is reordered ONCE into oneDNN's preferred blocked layout (format_tag::any) and kept; a primitive is
// created once per distinct row count M (plans are cached). Bias, exact GELU and an addend (Gemm's C,
// Linear's residual) run as oneDNN bias / post-ops, so the output is written once.
// bf16 (node attribute segmux_precision = "bf16"): weights are packed as bf16 once, activations are
// converted per run into a buffer that belongs to the plan; accumulation stays f32, and so does the output
// unless the compiler asked a Linear for bf16 (attr bf16_output: its readers round it anyway). A bf16
// input (such an output) goes to the primitive as it is. Where
// oneDNN has no bf16 matmul for this CPU (no AVX-512), the same numbers in f32: weight and activations
// rounded to bf16 values (products stay exact in f32), instead of the much slower reference kernel.
// General case (both operands computed): a batched oneDNN matmul with numpy batch broadcasting, f32.
// Shapes oneDNN refuses run on the reference kernel.
#include <map>
#include <tuple>
#include <unordered_map>

#include "ir/precision.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_common.h"

namespace segmux::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;

struct WeightMatMulConfig {
  int64_t K = 0, N = 0;
  Tensor weight;  // [K, N], or [N, K] when weight_transposed
  bool weight_transposed = false;
  bool trans_a = false;  // Gemm transA: A is [K, M]
  float alpha = 1.f;
  Tensor bias_const;    // [N], already scaled; undefined if none
  int bias_input = -1;  // runtime bias input index
  Tensor addend_const;  // added after everything else (Gemm C with broadcasting)
  int addend_input = -1;
  bool gelu = false, relu = false;
  bool bf16 = false;
  bool src_bf16 = false, dst_bf16 = false;  // activations stored as bf16 (Linear only, bf16 nodes only)
};

struct WeightPlan {
  bool ok = false;
  dnnl::matmul prim;
  memory::desc src_user_md, src_md, dst_md, bias_md, addend_md, scratch_md;  // scratch, bf16 src: run workspace
  dnnl::reorder src_reorder;
  std::shared_ptr<memory> packed;  // shared between plans whose weight layout agrees
  bool emulate_bf16 = false;       // f32 primitive on bf16-rounded values
  Tensor rounded_src;
};

class WeightMatMul : public Kernel {
 public:
  WeightMatMul(WeightMatMulConfig cfg, std::unique_ptr<Kernel> fallback, int64_t known_m)
      : cfg_(std::move(cfg)), fallback_(std::move(fallback)), weight_(cfg_.weight) {
    if (known_m > 0) plan_for(known_m, {1, 1}, nullptr);  // prepack at model load
  }

  size_t prepacked_bytes() const override { return weight_.bytes(); }

  void run(KernelContext& ctx) override {
    const Tensor& a = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    const int64_t K = cfg_.K, N = cfg_.N;
    int64_t M;
    if (cfg_.trans_a) {
      SEGMUX_CHECK(a.rank() == 2 && a.dim(0) == K, ctx.node.describe(), ": A ", shape_str(a.shape()),
                   " does not fit K=", K);
      M = a.dim(1);
    } else {
      SEGMUX_CHECK(a.rank() >= 1 && a.dim(-1) == K, ctx.node.describe(), ": A ", shape_str(a.shape()),
                   " does not end in K=", K);
      M = K == 0 ? 0 : a.numel() / K;
    }
    if (K == 0) return run_fallback(fallback_, ctx);  // output = bias / C only
    if (M == 0 || N == 0) return;
    const Tensor* addend = cfg_.addend_input >= 0 && size_t(cfg_.addend_input) < ctx.inputs.size()
                               ? ctx.inputs[size_t(cfg_.addend_input)]
                               : (cfg_.addend_const.defined() ? &cfg_.addend_const : nullptr);
    std::pair<int64_t, int64_t> addend_dims{0, 0};
    if (addend && !addend_2d(*addend, y.shape(), M, N, &addend_dims)) return run_fallback(fallback_, ctx);
    WeightPlan& p = plan_for(M, addend_dims, addend);
    if (!p.ok) return run_fallback(fallback_, ctx);
    set_run_threads(ctx.num_threads);
    dnnl::stream s(cpu_engine());
    const void* src_data = a.raw();
    if (p.emulate_bf16) {
      if (!p.rounded_src.defined() || p.rounded_src.numel() != a.numel()) p.rounded_src = Tensor(DType::f32, a.shape());
      if (cfg_.src_bf16)
        bf16_to_f32_values(a.data<uint16_t>(), p.rounded_src.data<float>(), a.numel(), ctx.num_threads);
      else
        round_to_bf16_values(a.data<float>(), p.rounded_src.data<float>(), a.numel(), ctx.num_threads);
      src_data = p.rounded_src.raw();
    }
    memory src_user(p.src_user_md, cpu_engine(), const_cast<void*>(src_data));
    memory src = src_user;
    if (cfg_.bf16 && !p.emulate_bf16 && !cfg_.src_bf16) {
      src = workspace_memory(WorkSlot::src, p.src_md);
      p.src_reorder.execute(s, src_user, src);
    }
    // An emulated bf16 output: the f32 result on the workspace, stored as bf16 below.
    const bool store_bf16 = cfg_.dst_bf16 && p.emulate_bf16;
    void* dst_data = store_bf16 ? run_workspace(WorkSlot::dst, p.dst_md.get_size()) : y.raw();
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_WEIGHTS, *p.packed},
                                         {DNNL_ARG_DST, memory(p.dst_md, cpu_engine(), dst_data)},
                                         {DNNL_ARG_SCRATCHPAD, workspace_memory(WorkSlot::scratch, p.scratch_md)}};
    if (cfg_.bias_const.defined())
      args[DNNL_ARG_BIAS] = memory(p.bias_md, cpu_engine(), const_cast<void*>(cfg_.bias_const.raw()));
    else if (cfg_.bias_input >= 0 && size_t(cfg_.bias_input) < ctx.inputs.size() &&
             ctx.inputs[size_t(cfg_.bias_input)]) {
      const Tensor& b = *ctx.inputs[size_t(cfg_.bias_input)];
      SEGMUX_CHECK(b.numel() == N, ctx.node.describe(), ": bias has ", b.numel(), " values, expected ", N);
      args[DNNL_ARG_BIAS] = memory(p.bias_md, cpu_engine(), const_cast<void*>(b.raw()));
    }
    if (addend) {
      int post_index = cfg_.gelu || cfg_.relu ? 1 : 0;
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1] =
          memory(p.addend_md, cpu_engine(), const_cast<void*>(addend->raw()));
    }
    p.prim.execute(s, args);
    s.wait();
    if (store_bf16)
      f32_to_bf16_values(static_cast<const float*>(dst_data), y.data<uint16_t>(), y.numel(), ctx.num_threads);
  }

 private:
  // Addend viewed as [1 or M, 1 or N] against the output [..., N] (M = rows); false if it is not.
  static bool addend_2d(const Tensor& t, const Shape& out, int64_t M, int64_t N, std::pair<int64_t, int64_t>* d) {
    if (t.dtype() != DType::f32 || t.rank() > int(out.size())) return false;
    const int off = int(out.size()) - t.rank();
    int64_t last = t.rank() == 0 ? 1 : t.dim(-1);
    if (last != 1 && last != N) return false;
    bool all_one = true, all_same = true;
    for (int i = 0; i + 1 < int(out.size()); ++i) {
      int64_t have = i - off >= 0 ? t.dim(i - off) : 1;
      all_one &= have == 1;
      all_same &= have == out[size_t(i)];
    }
    if (!all_one && !(all_same && off == 0)) return false;
    *d = {all_one ? 1 : M, last};
    return true;
  }

  WeightPlan& plan_for(int64_t M, std::pair<int64_t, int64_t> addend_dims, const Tensor* addend) {
    auto key = std::make_tuple(M, addend ? addend_dims.first : 0, addend ? addend_dims.second : 0);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    WeightPlan& p = plans_[key];
    for (bool emulate : {false, true}) {
      if (emulate && !cfg_.bf16) break;
      try {
        build(p, M, addend_dims, addend, emulate);
        p.ok = true;
        break;
      } catch (const dnnl::error&) {
        p.ok = false;
      }
    }
    return p;
  }

  void build(WeightPlan& p, int64_t M, std::pair<int64_t, int64_t> addend_dims, const Tensor* addend,
             bool emulate_bf16) {
    const int64_t K = cfg_.K, N = cfg_.N;
    const bool bf16 = cfg_.bf16 && !emulate_bf16;
    const dt compute = bf16 ? dt::bf16 : dt::f32;
    p.emulate_bf16 = emulate_bf16;
    // What the primitive reads: f32 values (emulated: a bf16 input is widened first), else the input's dtype.
    const dt user_src = cfg_.src_bf16 && !emulate_bf16 ? dt::bf16 : dt::f32;
    p.src_user_md = cfg_.trans_a ? memory::desc({M, K}, dt::f32, memory::dims{1, M}) : plain_md({M, K}, user_src);
    p.src_md = bf16 ? plain_md({M, K}, dt::bf16) : p.src_user_md;
    memory::desc wei_any({K, N}, compute, memory::format_tag::any);
    p.dst_md = plain_md({M, N}, cfg_.dst_bf16 && bf16 ? dt::bf16 : dt::f32);
    p.bias_md = plain_md({1, N}, dt::f32);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (cfg_.alpha != 1.f) attr.set_output_scales(0, {cfg_.alpha});
    dnnl::post_ops ops;
    if (cfg_.gelu) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    if (cfg_.relu) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    if (addend) {
      p.addend_md = plain_md({addend_dims.first, addend_dims.second}, dt::f32);
      ops.append_binary(dnnl::algorithm::binary_add, p.addend_md);
    }
    attr.set_post_ops(ops);
    const bool has_bias = cfg_.bias_const.defined() || cfg_.bias_input >= 0;
    auto desc = has_bias ? dnnl::matmul::desc(p.src_md, wei_any, p.bias_md, p.dst_md)
                         : dnnl::matmul::desc(p.src_md, wei_any, p.dst_md);
    dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    p.prim = dnnl::matmul(pd);
    p.scratch_md = pd.scratchpad_desc();
    if (bf16 && !cfg_.src_bf16)
      p.src_reorder =
          dnnl::reorder(memory(p.src_user_md, cpu_engine(), nullptr), memory(p.src_md, cpu_engine(), nullptr));
    memory::desc user =
        cfg_.weight_transposed ? memory::desc({K, N}, dt::f32, memory::dims{1, K}) : plain_md({K, N}, dt::f32);
    p.packed = weight_.get(user, pd.weights_desc(), emulate_bf16);
  }

  WeightMatMulConfig cfg_;
  std::unique_ptr<Kernel> fallback_;
  PackedWeight weight_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, WeightPlan> plans_;
};

// Both operands computed at run time: batched matmul with batch broadcasting (f32).
class BatchedMatMul : public Kernel {
 public:
  explicit BatchedMatMul(std::unique_ptr<Kernel> fallback) : fallback_(std::move(fallback)) {}

  void run(KernelContext& ctx) override {
    const Tensor& a = *ctx.inputs[0];
    const Tensor& b = *ctx.inputs[1];
    Tensor& y = *ctx.outputs[0];
    if (a.rank() < 2 || b.rank() < 2 || a.dim(-1) == 0) return run_fallback(fallback_, ctx);
    if (y.numel() == 0) return;
    const size_t r = size_t(y.rank());
    memory::dims ad(r, 1), bd(r, 1);
    for (int i = 0; i < a.rank(); ++i) ad[r - size_t(a.rank()) + size_t(i)] = a.dim(i);
    for (int i = 0; i < b.rank(); ++i) bd[r - size_t(b.rank()) + size_t(i)] = b.dim(i);
    auto key = std::make_pair(ad, bd);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      Plan p;
      try {
        p.a = plain_md(ad, dt::f32);
        p.b = plain_md(bd, dt::f32);
        p.y = plain_md(to_dims(y.shape()), dt::f32);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.y), attr, cpu_engine());
        p.prim = dnnl::matmul(pd);
        p.scratch_md = pd.scratchpad_desc();
        p.ok = true;
      } catch (const dnnl::error&) {
        p.ok = false;
      }
      it = plans_.emplace(key, std::move(p)).first;
    }
    Plan& p = it->second;
    if (!p.ok) return run_fallback(fallback_, ctx);
    set_run_threads(ctx.num_threads);
    dnnl::stream s(cpu_engine());
    p.prim.execute(s, {{DNNL_ARG_SRC, memory(p.a, cpu_engine(), const_cast<void*>(a.raw()))},
                       {DNNL_ARG_WEIGHTS, memory(p.b, cpu_engine(), const_cast<void*>(b.raw()))},
                       {DNNL_ARG_DST, memory(p.y, cpu_engine(), y.raw())},
                       {DNNL_ARG_SCRATCHPAD, workspace_memory(WorkSlot::scratch, p.scratch_md)}});
    s.wait();
  }

 private:
  struct Plan {
    bool ok = false;
    memory::desc a, b, y;
    dnnl::matmul prim;
    memory::desc scratch_md;  // on the run workspace
  };
  std::unique_ptr<Kernel> fallback_;
  std::map<std::pair<memory::dims, memory::dims>, Plan> plans_;
};

bool is_f32(const ir::TensorType* t) { return t && t->dtype == DType::f32; }

// Rows of A known at load time (for prepacking then), else 0.
int64_t known_rows(const ir::TensorType* a, int64_t K, bool trans_a) {
  if (!shape_known(a) || a->shape.empty() || K == 0) return 0;
  if (trans_a) return a->shape.size() == 2 ? a->shape[1] : 0;
  return shape_numel(a->shape) / K;
}

Tensor scaled_copy(const Tensor& t, float s) {
  Tensor c = t.clone();
  float* p = c.data<float>();
  for (int64_t i = 0; i < c.numel(); ++i) p[i] *= s;
  return c;
}

}  // namespace

std::unique_ptr<Kernel> make_matmul(const KernelInit& init) {
  if (init.inputs.size() != 2 || !is_f32(init.inputs[0]) || !is_f32(init.inputs[1])) return nullptr;
  if (init.outputs.empty() || init.outputs[0].dtype != DType::f32) return nullptr;
  const ir::TensorType* a = init.inputs[0];
  const ir::TensorType* b = init.inputs[1];
  if (!a->has_shape || !b->has_shape || a->shape.size() < 2 || b->shape.size() < 2) return nullptr;
  const Tensor* w = init.constants.size() > 1 ? init.constants[1] : nullptr;
  if (w && w->rank() == 2) {
    WeightMatMulConfig cfg;
    cfg.K = w->dim(0);
    cfg.N = w->dim(1);
    cfg.weight = *w;
    cfg.bf16 = ir::wants_bf16(init.node);
    int64_t m = known_rows(a, cfg.K, false);
    return std::make_unique<WeightMatMul>(std::move(cfg), reference_fallback(init), m);
  }
  return std::make_unique<BatchedMatMul>(reference_fallback(init));
}

std::unique_ptr<Kernel> make_gemm(const KernelInit& init) {
  if (init.inputs.size() < 2 || !is_f32(init.inputs[0]) || !is_f32(init.inputs[1])) return nullptr;
  const Tensor* w = init.constants.size() > 1 ? init.constants[1] : nullptr;
  if (!w || w->rank() != 2) return nullptr;
  WeightMatMulConfig cfg;
  cfg.weight_transposed = init.node.attr_int("transB", 0) != 0;
  cfg.trans_a = init.node.attr_int("transA", 0) != 0;
  cfg.K = cfg.weight_transposed ? w->dim(1) : w->dim(0);
  cfg.N = cfg.weight_transposed ? w->dim(0) : w->dim(1);
  cfg.weight = *w;
  cfg.alpha = init.node.attr_float("alpha", 1.f);
  const float beta = init.node.attr_float("beta", 1.f);
  cfg.bf16 = ir::wants_bf16(init.node);
  if (init.inputs.size() > 2 && init.inputs[2]) {
    if (!is_f32(init.inputs[2])) return nullptr;
    const Tensor* c = init.constants.size() > 2 ? init.constants[2] : nullptr;
    if (c) {
      const bool row_vector = c->numel() == cfg.N && (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1));
      Tensor scaled = beta == 1.f ? *c : scaled_copy(*c, beta);
      if (row_vector && cfg.alpha == 1.f) {
        cfg.bias_const = scaled;
      } else {
        cfg.addend_const = scaled;
      }
    } else {
      if (beta != 1.f) return nullptr;
      cfg.addend_input = 2;
    }
  }
  int64_t m = known_rows(init.inputs[0], cfg.K, cfg.trans_a);
  return std::make_unique<WeightMatMul>(std::move(cfg), reference_fallback(init), m);
}

std::unique_ptr<Kernel> make_linear(const KernelInit& init) {
  if (init.inputs.size() < 2 || !init.inputs[0] || !is_f32(init.inputs[1]) || init.outputs.empty()) return nullptr;
  const Tensor* w = init.constants.size() > 1 ? init.constants[1] : nullptr;
  if (!w || w->rank() != 2) return nullptr;
  WeightMatMulConfig cfg;
  cfg.K = w->dim(0);
  cfg.N = w->dim(1);
  cfg.weight = *w;
  cfg.bf16 = ir::wants_bf16(init.node);
  // bf16 activations only on bf16 nodes (the f32 ones run on the reference kernel then).
  cfg.src_bf16 = init.inputs[0]->dtype == DType::bf16;
  cfg.dst_bf16 = init.outputs[0].dtype == DType::bf16;
  if ((!is_f32(init.inputs[0]) && !cfg.src_bf16) || (init.outputs[0].dtype != DType::f32 && !cfg.dst_bf16))
    return nullptr;
  if ((cfg.src_bf16 || cfg.dst_bf16) && !cfg.bf16) return nullptr;
  const std::string act = init.node.attr_string("activation", "");
  if (act == "gelu") {
    cfg.gelu = true;
  } else if (act == "relu") {
    cfg.relu = true;
  } else if (!act.empty()) {
    return nullptr;
  }
  if (init.inputs.size() > 2 && init.inputs[2]) {
    if (!is_f32(init.inputs[2])) return nullptr;
    const Tensor* b = init.constants.size() > 2 ? init.constants[2] : nullptr;
    if (b) {
      if (b->numel() != cfg.N) return nullptr;
      cfg.bias_const = *b;
    } else {
      cfg.bias_input = 2;
    }
  }
  if (init.inputs.size() > 3 && init.inputs[3]) {
    if (!is_f32(init.inputs[3])) return nullptr;
    const Tensor* res = init.constants.size() > 3 ? init.constants[3] : nullptr;
    if (res) {
      cfg.addend_const = *res;
    } else {
      cfg.addend_input = 3;
    }
  }
  int64_t m = known_rows(init.inputs[0], cfg.K, false);
  return std::make_unique<WeightMatMul>(std::move(cfg), reference_fallback(init), m);
}

}  // namespace segmux::cpu
