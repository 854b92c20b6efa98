// Small pattern-matching helpers shared by the fusion passes (internal to src/compiler/passes).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "compiler/passes.h"
#include "ir/graph.h"

namespace segmux::compiler::fuse {

// Graph view for matching: producers, consumers, graph outputs, nodes already claimed by a rewrite.
struct Matcher {
  ir::Graph& g;
  std::vector<std::vector<int>> consumers;
  std::vector<char> is_output;
  std::vector<char> removed;

  explicit Matcher(ir::Graph& graph) : g(graph) { refresh(); }
  void refresh() {
    consumers = g.consumers();
    is_output.assign(g.values.size(), 0);
    for (int v : g.outputs) is_output[size_t(v)] = 1;
    removed.assign(g.nodes.size(), 0);
  }

  // The live node producing v (-1 for inputs, initializers, removed nodes).
  int producer(int v) const {
    if (v < 0) return -1;
    int p = g.value(v).producer;
    return p >= 0 && !removed[size_t(p)] ? p : -1;
  }
  const ir::Node* node_of(int v, const char* op) const {
    int p = producer(v);
    if (p < 0) return nullptr;
    const ir::Node& n = g.nodes[size_t(p)];
    return n.domain.empty() && n.op_type == op ? &n : nullptr;
  }
  // v feeds exactly one node and is not a graph output: the pattern may absorb its producer.
  bool internal(int v) const { return v >= 0 && !is_output[size_t(v)] && consumers[size_t(v)].size() == 1; }
  // The single consumer of v, when it is an op of this type; else -1.
  int sole_consumer(int v, const char* op) const {
    if (!internal(v)) return -1;
    int c = consumers[size_t(v)][0];
    const ir::Node& n = g.nodes[size_t(c)];
    return !removed[size_t(c)] && n.domain.empty() && n.op_type == op ? c : -1;
  }
  // Scalar (one element) constant value of v, if it is one.
  bool scalar(int v, double* out) const {
    const Tensor* t = v >= 0 ? g.initializer(v) : nullptr;
    if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return false;
    *out = t->get_as_double(0);
    return true;
  }
  bool scalar_near(int v, double want) const {
    double x;
    return scalar(v, &x) && std::fabs(x - want) <= 1e-6 * std::fabs(want);
  }
  // The other input of a two-input node.
  static int other(const ir::Node& n, int v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; }
  int node_index(const ir::Node* n) const { return int(n - g.nodes.data()); }
  void remove(int node) { removed[size_t(node)] = 1; }
  // Drops the removed nodes (call once per pass, after all rewrites).
  void commit() {
    bool any = false;
    for (char r : removed) any |= r != 0;
    if (any) remove_nodes(g, removed);
  }
};

// Adds a constant and returns its value id.
inline int add_constant(ir::Graph& g, const Tensor& t, const std::string& name) {
  std::string n = name;
  for (int i = 1; g.find_value(n) >= 0; ++i) n = name + "_" + std::to_string(i);
  int v = g.add_value(n, t.dtype(), t.shape());
  g.initializers.emplace(v, t);
  return v;
}

}  // namespace segmux::compiler::fuse
