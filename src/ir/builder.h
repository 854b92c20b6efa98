// GraphBuilder: how model code writes graphs. Every op is shape-inferred as it is added, so model
// code can read shapes back (b.shape(v)) and mistakes surface at the line that made them.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/op_schema.h"

namespace segmux::ir {

using Attrs = std::map<std::string, AttrValue>;

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}

  int input(const std::string& name, DType dtype, const Shape& shape);
  // A constant (initializer). Name is scoped; duplicates get a numeric suffix.
  int constant(const Tensor& t, const std::string& name = "const");
  int scalar_f32(float v) { return constant(Tensor::scalar<float>(v), "scalar"); }
  int ints(const std::vector<int64_t>& v) {
    return constant(Tensor::from_vector<int64_t>({int64_t(v.size())}, v), "ints");
  }

  // Adds a node; returns its outputs. Shape inference runs immediately.
  std::vector<int> op(const std::string& op_type, const std::vector<int>& inputs, const Attrs& attrs = {},
                      int num_outputs = 1, const std::string& domain = "");
  int op1(const std::string& op_type, const std::vector<int>& inputs, const Attrs& attrs = {},
          const std::string& domain = "") {
    return op(op_type, inputs, attrs, 1, domain)[0];
  }
  // Marks v as a graph output under the given name (renames the value).
  void output(int v, const std::string& name);

  const Shape& shape(int v) const;
  DType dtype(int v) const { return g_.value(v).dtype; }
  const Tensor* constant_value(int v) const { return g_.initializer(v); }
  Graph& graph() { return g_; }

  // Name scopes: nodes and values created inside get "scope/..." names (readable errors, ONNX names).
  void push_scope(const std::string& s) { scopes_.push_back(s); }
  void pop_scope() { scopes_.pop_back(); }
  std::string scoped(const std::string& base) const;

 private:
  std::string unique(const std::string& base);
  Graph& g_;
  std::vector<std::string> scopes_;
  std::map<std::string, int> counters_;
};

// RAII helper: { Scope s(b, "blocks.3"); ... }
struct Scope {
  Scope(GraphBuilder& b, const std::string& name) : b_(b) { b_.push_scope(name); }
  ~Scope() { b_.pop_scope(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  GraphBuilder& b_;
};

}  // namespace segmux::ir
