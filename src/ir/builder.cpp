#include "ir/builder.h"

namespace segmux::ir {

std::string GraphBuilder::scoped(const std::string& base) const {
  std::string s;
  for (auto& sc : scopes_) s += sc + "/";
  return s + base;
}

std::string GraphBuilder::unique(const std::string& base) {
  std::string name = scoped(base);
  int& n = counters_[name];
  std::string out = n == 0 ? name : name + "_" + std::to_string(n);
  ++n;
  while (g_.find_value(out) >= 0) out = name + "_" + std::to_string(n++);
  return out;
}

int GraphBuilder::input(const std::string& name, DType dtype, const Shape& shape) {
  SEGMUX_CHECK(g_.find_value(name) < 0, "graph input name '", name, "' is already used");
  int v = g_.add_value(name, dtype, shape);
  g_.inputs.push_back(v);
  return v;
}

int GraphBuilder::constant(const Tensor& t, const std::string& name) {
  int v = g_.add_value(unique(name), t.dtype(), t.shape());
  g_.initializers.emplace(v, t);
  return v;
}

std::vector<int> GraphBuilder::op(const std::string& op_type, const std::vector<int>& inputs, const Attrs& attrs,
                                  int num_outputs, const std::string& domain) {
  Node n;
  n.op_type = op_type;
  n.domain = domain;
  n.name = unique(op_type);
  n.inputs = inputs;
  n.attrs = attrs;
  std::vector<TensorType> types(inputs.size());
  std::vector<const TensorType*> ins(inputs.size(), nullptr);
  std::vector<const Tensor*> vals(inputs.size(), nullptr);
  for (size_t k = 0; k < inputs.size(); ++k) {
    int v = inputs[k];
    if (v < 0) continue;
    SEGMUX_CHECK(v < int(g_.values.size()), n.describe(), ": input ", k, " refers to a missing value");
    const Value& val = g_.value(v);
    types[k] = TensorType{val.dtype, val.shape, val.has_shape};
    ins[k] = &types[k];
    vals[k] = g_.initializer(v);
  }
  for (int k = 0; k < num_outputs; ++k) n.outputs.push_back(-1);  // placeholder for describe()
  auto outs = infer_node(n, ins, vals);
  const int node_index = int(g_.nodes.size());
  for (int k = 0; k < num_outputs; ++k) {
    int v = g_.add_value(n.name + (num_outputs == 1 ? "" : ":" + std::to_string(k)), outs[size_t(k)].dtype,
                         outs[size_t(k)].has_shape ? std::optional<Shape>(outs[size_t(k)].shape) : std::nullopt);
    g_.value(v).producer = node_index;
    n.outputs[size_t(k)] = v;
  }
  g_.nodes.push_back(std::move(n));
  return g_.nodes.back().outputs;
}

void GraphBuilder::output(int v, const std::string& name) {
  int existing = g_.find_value(name);
  SEGMUX_CHECK(existing < 0 || existing == v, "graph output name '", name, "' is already used");
  g_.value(v).name = name;
  g_.outputs.push_back(v);
}

const Shape& GraphBuilder::shape(int v) const {
  const Value& val = g_.value(v);
  SEGMUX_CHECK(val.has_shape, "value '", val.name, "' has no known shape");
  return val.shape;
}

}  // namespace segmux::ir
