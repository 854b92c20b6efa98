// The optimized CPU provider: oneDNN for GEMM/conv, our vectorised kernels elsewhere. A factory returns
// nullptr for nodes (or dtypes) it does not handle, and the session falls back to the reference kernel.
#include <algorithm>
#include <map>

#include "kernels/cpu/cpu_kernels.h"

namespace segmux {

namespace {
using Factory = std::unique_ptr<Kernel> (*)(const KernelInit&);

const std::map<std::string, Factory>& cpu_table() {
  static const std::map<std::string, Factory> t = {
      {"::MatMul", cpu::make_matmul},
      {"::Gemm", cpu::make_gemm},
      {"::Conv", cpu::make_conv},
      {"::ConvTranspose", cpu::make_conv_transpose},
      {"::Add", cpu::make_binary},
      {"::Sub", cpu::make_binary},
      {"::Mul", cpu::make_binary},
      {"::Div", cpu::make_binary},
      {"::Softmax", cpu::make_softmax},
      {"::LayerNormalization", cpu::make_layer_norm},
      {"::Transpose", cpu::make_transpose},
      {"::Split", cpu::make_split},
      {"::Concat", cpu::make_concat},
      {"::Expand", cpu::make_expand},
      {"::Sigmoid", cpu::make_sigmoid},
      {"::ReduceMean", cpu::make_reduce_mean},
      {"::Resize", cpu::make_resize},
      {"segmux::Linear", cpu::make_linear},
      {"segmux::Conv", cpu::make_conv},
      {"segmux::Gelu", cpu::make_gelu},
      {"segmux::Pointwise", cpu::make_pointwise},
      {"segmux::GroupNorm", cpu::make_group_norm},
      {"segmux::Attention", cpu::make_attention},
      {"segmux::Rope", cpu::make_rope},
  };
  return t;
}
}  // namespace

std::vector<std::string> cpu_kernel_ops() {
  std::vector<std::string> names;
  for (const auto& [k, factory] : cpu_table()) names.push_back(op_name_of_key(k));
  std::sort(names.begin(), names.end());
  return names;
}

const Provider& cpu_provider() {
  static Provider p{"cpu", [](const KernelInit& init) -> std::unique_ptr<Kernel> {
                      const std::string domain = init.node.domain == "ai.onnx" ? "" : init.node.domain;
                      auto it = cpu_table().find(domain + "::" + init.node.op_type);
                      if (it == cpu_table().end()) return nullptr;
                      return it->second(init);
                    }};
  return p;
}

}  // namespace segmux
