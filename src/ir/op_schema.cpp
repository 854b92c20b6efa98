#include "ir/op_schema.h"

#include <map>
#include <mutex>

namespace segmux::ir {

const TensorType& InferContext::in(size_t i) const {
  if (i >= inputs.size() || inputs[i] == nullptr) error("required input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

void InferContext::error(const std::string& what) const { fail(node.describe(), ": ", what); }

namespace {
std::map<std::string, OpSchema>& table() {
  static std::map<std::string, OpSchema> t;
  return t;
}
std::string key(std::string_view domain, std::string_view op) {
  return std::string(domain == "ai.onnx" ? "" : domain) + "::" + std::string(op);
}
}  // namespace

void register_schema(OpSchema schema) {
  std::string k = key(schema.domain, schema.op_type);
  table()[k] = std::move(schema);
}

const OpSchema* find_schema(std::string_view domain, std::string_view op_type) {
  register_builtin_schemas();
  auto it = table().find(key(domain, op_type));
  return it == table().end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> all_schemas() {
  register_builtin_schemas();
  std::vector<const OpSchema*> out;
  for (auto& [k, s] : table()) out.push_back(&s);
  return out;
}

std::vector<TensorType> infer_node(const Node& node, const std::vector<const TensorType*>& inputs,
                                   const std::vector<const Tensor*>& input_values) {
  const OpSchema* s = find_schema(node.domain, node.op_type);
  if (!s)
    fail(node.describe(), ": unknown op type '", node.op_type, "'",
         node.domain.empty() ? "" : " in domain '" + node.domain + "'");
  int ni = int(node.inputs.size()), no = int(node.outputs.size());
  SEGMUX_CHECK(ni >= s->min_inputs && ni <= s->max_inputs, node.describe(), ": has ", ni, " inputs, expected ",
               s->min_inputs, "..", s->max_inputs);
  SEGMUX_CHECK(no >= s->min_outputs && no <= s->max_outputs, node.describe(), ": has ", no, " outputs, expected ",
               s->min_outputs, "..", s->max_outputs);
  InferContext ctx{node, inputs, input_values, {}};
  ctx.outputs.resize(size_t(no));
  s->infer(ctx);
  SEGMUX_CHECK(ctx.outputs.size() == size_t(no), node.describe(), ": schema produced ", ctx.outputs.size(),
               " output types for ", no, " outputs");
  return ctx.outputs;
}

void infer_shapes(Graph& g) {
  for (auto& node : g.nodes) {
    std::vector<TensorType> types(node.inputs.size());
    std::vector<const TensorType*> ins(node.inputs.size(), nullptr);
    std::vector<const Tensor*> vals(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int v = node.inputs[k];
      if (v < 0) continue;
      const Value& val = g.value(v);
      types[k] = TensorType{val.dtype, val.shape, val.has_shape};
      ins[k] = &types[k];
      vals[k] = g.initializer(v);
    }
    auto outs = infer_node(node, ins, vals);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int v = node.outputs[k];
      if (v < 0) continue;
      Value& val = g.value(v);
      val.dtype = outs[k].dtype;
      val.shape = outs[k].shape;
      val.has_shape = outs[k].has_shape;
    }
  }
}

void verify(Graph& g) {
  verify_structure(g);
  infer_shapes(g);
  for (int v : g.outputs)
    SEGMUX_CHECK(g.value(v).has_shape, "graph output '", g.value(v).name, "' has no static shape");
}

}  // namespace segmux::ir
