#include "runtime/node_kernels.h"

namespace segmux {

std::vector<const Provider*> kernel_providers(bool use_optimized_kernels) {
  std::vector<const Provider*> providers;
  if (use_optimized_kernels) providers.push_back(&cpu_provider());
  providers.push_back(&reference_provider());
  return providers;
}

std::unique_ptr<Kernel> create_node_kernel(const ir::Graph& g, const ir::Node& node,
                                           const std::vector<const Provider*>& providers, int num_threads,
                                           std::string* chosen) {
  std::vector<ir::TensorType> types(node.inputs.size());  // outlives the KernelInit that points into it
  KernelInit init{node, {}, {}, {}, num_threads};
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    int v = node.inputs[k];
    if (v < 0) {
      init.inputs.push_back(nullptr);
      init.constants.push_back(nullptr);
      continue;
    }
    const ir::Value& val = g.value(v);
    types[k] = ir::TensorType{val.dtype, val.shape, val.has_shape};
    init.inputs.push_back(&types[k]);
    init.constants.push_back(g.initializer(v));
  }
  for (int o : node.outputs) {
    if (o < 0) {
      init.outputs.push_back({});
      continue;
    }
    const ir::Value& val = g.value(o);
    init.outputs.push_back(ir::TensorType{val.dtype, val.shape, val.has_shape});
  }
  return create_kernel(providers, init, chosen);
}

}  // namespace segmux
