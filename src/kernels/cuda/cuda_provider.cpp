#include "kernels/cuda/cuda_provider.h"

#include <algorithm>

#include "ir/strided_view.h"
#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda {

namespace ops {

namespace {

class LaunchKernel : public Kernel {
 public:
  LaunchKernel(LaunchFn fn, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {}
  void run(KernelContext& ctx) override {
    try {
      fn_(ctx, current_stream());
    } catch (const Error& e) {
      fail(ctx.node.describe(), " (CUDA ", name_, "): ", e.what());
    }
  }

 private:
  LaunchFn fn_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> launch_kernel(LaunchFn fn, std::string name) {
  return std::make_unique<LaunchKernel>(std::move(fn), std::move(name));
}

Broadcast make_broadcast(const Shape& out, const std::vector<Shape>& ins) {
  SEGMUX_CHECK(out.size() <= size_t(kMaxRank) && ins.size() <= size_t(kMaxOperands), "broadcast of rank ", out.size(),
               " with ", ins.size(), " operands is beyond the CUDA kernels' limits");
  Broadcast b;
  b.rank = int(out.size());
  for (size_t d = 0; d < out.size(); ++d) b.out_dims[d] = out[d];
  for (size_t k = 0; k < ins.size(); ++k) {
    const Shape& s = ins[k];
    SEGMUX_CHECK(s.size() <= out.size(), "operand ", shape_str(s), " has a higher rank than ", shape_str(out));
    const auto st = contiguous_strides(s);
    const size_t shift = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      SEGMUX_CHECK(s[d] == out[d + shift] || s[d] == 1, "operand ", shape_str(s), " does not broadcast to ",
                   shape_str(out));
      b.strides[k][d + shift] = s[d] == 1 ? 0 : st[d];
    }
  }
  return b;
}

bool scalar_kind_of(DType t, ScalarKind* kind) {
  switch (t) {
    case DType::f32:
      *kind = ScalarKind::f32;
      return true;
    case DType::bf16:
      *kind = ScalarKind::bf16;
      return true;
    case DType::f64:
      *kind = ScalarKind::f64;
      return true;
    case DType::i64:
      *kind = ScalarKind::i64;
      return true;
    case DType::i32:
      *kind = ScalarKind::i32;
      return true;
    case DType::i8:
      *kind = ScalarKind::i8;
      return true;
    case DType::u8:
      *kind = ScalarKind::u8;
      return true;
    case DType::boolean:
      *kind = ScalarKind::boolean;
      return true;
    default:
      return false;
  }
}

std::vector<int64_t> const_ints(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(t.get_as_double(int64_t(i)));
  return v;
}

bool inputs_are(const KernelInit& init, DType t) {
  for (const ir::TensorType* in : init.inputs)
    if (in && in->dtype != t) return false;
  return true;
}

std::string dtype_reason(const KernelInit& init, const char* wanted) {
  std::string got;
  for (const ir::TensorType* in : init.inputs)
    got += std::string(got.empty() ? "" : ", ") + (in ? std::string(dtype_name(in->dtype)) : "-");
  return std::string("the CUDA kernel takes ") + wanted + " inputs, this node has (" + got + ")";
}

int64_t normalized_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

}  // namespace ops

namespace {

const ops::OpTable& table() {
  static const ops::OpTable t = [] {
    ops::OpTable table;
    ops::add_elementwise_ops(table);
    ops::add_movement_ops(table);
    ops::add_norm_ops(table);
    ops::add_linalg_ops(table);
    ops::add_index_ops(table);
    ops::add_conv_ops(table);
    return table;
  }();
  return t;
}

std::string op_key(const ir::Node& n) { return n.domain.empty() ? n.op_type : n.domain + "." + n.op_type; }

std::string static_shape_reason(const KernelInit& init) {
  auto bad = [](const ir::TensorType& t) {
    if (!t.has_shape || t.shape.size() > size_t(kMaxRank)) return true;
    return std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; });
  };
  for (size_t k = 0; k < init.inputs.size(); ++k)
    if (init.inputs[k] && bad(*init.inputs[k]))
      return "input " + std::to_string(k) + " has no static shape of rank <= " + std::to_string(kMaxRank);
  for (size_t k = 0; k < init.outputs.size(); ++k)
    if (bad(init.outputs[k]))
      return "output " + std::to_string(k) + " has no static shape of rank <= " + std::to_string(kMaxRank);
  return "";
}

Provider make_provider(Fp32Gemm mode) {
  return Provider{mode == Fp32Gemm::tf32 ? "cuda-tf32" : "cuda", [mode](const KernelInit& init) {
                    std::unique_ptr<Kernel> k;
                    if (cuda_unsupported_reason(init).empty()) k = table().at(op_key(init.node)).make(init, mode);
                    return k;
                  }};
}

}  // namespace

std::string cuda_unsupported_reason(const KernelInit& init) {
  auto it = table().find(op_key(init.node));
  if (it == table().end()) return "no CUDA kernel for op " + op_key(init.node) + " yet";
  if (std::string why = static_shape_reason(init); !why.empty()) return why;
  // The attention-views pass's attributes: CPU builds only (compiler::CompileOptions::strided_views).
  for (int i = 0; i < int(init.node.inputs.size()); ++i)
    if (init.node.has_attr(ir::input_view_attr(i)))
      return "input " + std::to_string(i) + " is a strided view, which the CUDA kernels do not read";
  if (init.node.has_attr(ir::kOutputPerm)) return "a permuted output, which the CUDA kernels do not write";
  return it->second.check(init);
}

std::vector<std::string> cuda_supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : table()) names.push_back(name);
  return names;  // std::map: sorted
}

const Provider& cuda_provider(Fp32Gemm fp32_gemm) {
  static const Provider exact = make_provider(Fp32Gemm::exact);
  static const Provider tf32 = make_provider(Fp32Gemm::tf32);
  return fp32_gemm == Fp32Gemm::tf32 ? tf32 : exact;
}

}  // namespace segmux::cuda
