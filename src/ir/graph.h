// The graph IR: named values, nodes with ONNX op types and attributes, initializers.
// Op semantics are ONNX's (opset 17, default domain) unless a node names the "segmux" domain.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace segmux::ir {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor>;

struct Value {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;             // meaningful only when has_shape
  bool has_shape = false;  // false until inference (or the producer) fixes it
  int producer = -1;       // node index, -1 for graph inputs and initializers
};

struct Node {
  std::string op_type;
  std::string domain;  // "" = ONNX default domain
  std::string name;
  std::vector<int> inputs;   // value ids; -1 marks an omitted optional input
  std::vector<int> outputs;  // value ids; -1 marks an omitted optional output
  std::map<std::string, AttrValue> attrs;

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  int64_t attr_int(const std::string& k, int64_t def) const;
  float attr_float(const std::string& k, float def) const;
  std::string attr_string(const std::string& k, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& k, const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(const std::string& k, const std::vector<float>& def = {}) const;
  const Tensor* attr_tensor(const std::string& k) const;
  // "node 'blocks.0.attn/MatMul_3' (MatMul)": how errors name a node.
  std::string describe() const;
};

class Graph {
 public:
  std::string name = "graph";
  std::vector<Value> values;
  std::vector<Node> nodes;  // topological order is kept by the builder and checked by verify()
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<int, Tensor> initializers;           // value id -> constant data
  std::map<std::string, std::string> metadata;  // free-form (producer, contract notes)

  int add_value(const std::string& name, DType dtype, std::optional<Shape> shape = std::nullopt);
  int find_value(const std::string& name) const;  // -1 when absent
  const Value& value(int id) const { return values.at(size_t(id)); }
  Value& value(int id) { return values.at(size_t(id)); }
  bool is_initializer(int id) const { return initializers.count(id) != 0; }
  const Tensor* initializer(int id) const;
  // Consumers of each value (node indices), computed on demand.
  std::vector<std::vector<int>> consumers() const;
  // Removes nodes not needed for the graph outputs and values nobody uses; renumbers.
  void compact();
  // Makes every value name unique (appending suffixes) so the graph can be exported.
  void uniquify_names();
};

// Structural checks with plain-words messages: dangling ids, use before definition, duplicate names,
// outputs without producers, initializer shape/dtype agreement. Throws segmux::Error.
void verify_structure(const Graph& g);

}  // namespace segmux::ir
