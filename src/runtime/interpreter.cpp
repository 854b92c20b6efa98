#include "runtime/interpreter.h"

#include "runtime/node_kernels.h"

namespace segmux {

Interpreter::Interpreter(ir::Graph graph, InterpreterOptions options) : graph_(std::move(graph)), options_(options) {
  ir::verify_structure(graph_);
  ir::infer_shapes(graph_);
  const auto providers = kernel_providers(options_.use_optimized_kernels);
  for (const ir::Node& node : graph_.nodes) {
    std::string chosen;
    kernels_.push_back(create_node_kernel(graph_, node, providers, options_.num_threads, &chosen));
    node_providers_.push_back(chosen);
  }
}

Interpreter::~Interpreter() = default;

std::map<std::string, Tensor> Interpreter::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> values(graph_.values.size());
  std::vector<char> ready(graph_.values.size(), 0);
  for (auto& [id, t] : graph_.initializers) {
    values[size_t(id)] = t;
    ready[size_t(id)] = 1;
  }
  for (int v : graph_.inputs) {
    const ir::Value& val = graph_.value(v);
    auto it = inputs.find(val.name);
    SEGMUX_CHECK(it != inputs.end(), "missing input '", val.name, "' (", dtype_name(val.dtype), " ",
                 shape_str(val.shape), ")");
    SEGMUX_CHECK(it->second.dtype() == val.dtype, "input '", val.name, "' is ", dtype_name(it->second.dtype()),
                 ", the model expects ", dtype_name(val.dtype));
    SEGMUX_CHECK(!val.has_shape || it->second.shape() == val.shape, "input '", val.name, "' has shape ",
                 shape_str(it->second.shape()), ", the model expects ", shape_str(val.shape));
    values[size_t(v)] = it->second;
    ready[size_t(v)] = 1;
  }
  for (auto& [name, t] : inputs) {
    int v = graph_.find_value(name);
    bool is_input = false;
    for (int in : graph_.inputs) is_input |= in == v;
    SEGMUX_CHECK(is_input, "'", name, "' is not an input of the model");
  }
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const ir::Node& node = graph_.nodes[n];
    std::vector<ir::TensorType> types(node.inputs.size());
    std::vector<const ir::TensorType*> tin(node.inputs.size(), nullptr);
    std::vector<const Tensor*> vin(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int v = node.inputs[k];
      if (v < 0) continue;
      const Tensor& t = values[size_t(v)];
      types[k] = ir::TensorType{t.dtype(), t.shape(), true};
      tin[k] = &types[k];
      vin[k] = &t;
    }
    auto out_types = ir::infer_node(node, tin, vin);
    std::vector<Tensor> outs(node.outputs.size());
    std::vector<Tensor*> out_ptrs;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      bool known = out_types[k].has_shape;
      for (int64_t d : out_types[k].shape) known = known && d >= 0;
      if (known) outs[k] = Tensor(out_types[k].dtype, out_types[k].shape);
      out_ptrs.push_back(&outs[k]);
    }
    KernelContext ctx{node, vin, out_ptrs, options_.num_threads};
    kernels_[n]->run(ctx);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int o = node.outputs[k];
      if (o < 0) continue;
      SEGMUX_CHECK(outs[k].defined(), node.describe(), ": kernel left output ", k, " unset");
      values[size_t(o)] = std::move(outs[k]);
      ready[size_t(o)] = 1;
    }
    // Free values whose last consumer has run would go here; the compiled executor plans memory instead.
  }
  std::map<std::string, Tensor> result;
  for (int v : graph_.outputs) result[graph_.value(v).name] = values[size_t(v)];
  return result;
}

}  // namespace segmux
