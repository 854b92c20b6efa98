// Chains of f32 element-wise ops -> segmux Pointwise (ir/pointwise.h): one pass over memory instead of
// one per op (the memory encoder's mask input: Sigmoid, *2, -1, * slot validity on 16 full-resolution
// masks; the detector's Add -> Relu).
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"
#include "ir/pointwise.h"

namespace segmux::compiler {

namespace {

bool broadcasts_into(const Shape& operand, const Shape& to) {
  if (operand.size() > to.size()) return false;
  for (size_t i = 0; i < operand.size(); ++i) {
    const int64_t d = operand[i], t = to[to.size() - operand.size() + i];
    if (d != t && d != 1) return false;
  }
  return true;
}

struct Link {
  ir::PointwiseStep step;
  int operand = -1;  // binary steps
};

class ChainFinder {
 public:
  explicit ChainFinder(fuse::Matcher& m) : m_(m) {}

  // Node `n` as a step applied to the running value `value` of shape `shape`; false if it cannot be one.
  bool as_step(const ir::Node& n, int value, const Shape& shape, Link* link) const {
    *link = Link{};
    if (!n.domain.empty() || n.outputs.size() != 1 || !ir::pointwise_op_of(n.op_type, &link->step.op)) return false;
    const ir::Value& out = m_.g.value(n.outputs[0]);
    if (out.dtype != DType::f32 || !out.has_shape || out.shape != shape) return false;
    for (int v : n.inputs)
      if (v < 0 || m_.g.value(v).dtype != DType::f32 || !m_.g.value(v).has_shape) return false;
    if (!link->step.binary()) return n.inputs.size() == 1 && n.inputs[0] == value;
    if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return false;
    link->step.operand_first = n.inputs[1] == value;
    if (!link->step.operand_first && n.inputs[0] != value) return false;
    link->operand = fuse::Matcher::other(n, value);
    return broadcasts_into(m_.g.value(link->operand).shape, shape);
  }

  // The running value a chain starting at node `n` begins with: its only input (unary) or the input
  // of the output's shape (binary), -1 if none.
  int start_value(const ir::Node& n) const {
    if (n.outputs.size() != 1 || !m_.g.value(n.outputs[0]).has_shape) return -1;
    for (int v : n.inputs)
      if (v >= 0 && m_.g.value(v).has_shape && m_.g.value(v).shape == m_.g.value(n.outputs[0]).shape) return v;
    return -1;
  }

 private:
  fuse::Matcher& m_;
};

}  // namespace

bool fuse_pointwise(ir::Graph& g) {
  fuse::Matcher m(g);
  ChainFinder finder(m);
  bool changed = false;
  for (size_t first = 0; first < g.nodes.size(); ++first) {
    if (m.removed[first]) continue;
    const int x = finder.start_value(g.nodes[first]);
    if (x < 0) continue;
    const Shape shape = g.value(x).shape;
    std::vector<Link> links;
    std::vector<int> nodes;
    Link link;
    int node = int(first), value = x;
    while (node >= 0 && finder.as_step(g.nodes[size_t(node)], value, shape, &link)) {
      links.push_back(link);
      nodes.push_back(node);
      value = g.nodes[size_t(node)].outputs[0];
      node = m.internal(value) ? m.consumers[size_t(value)][0] : -1;
      if (node >= 0 && m.removed[size_t(node)]) node = -1;
    }
    if (links.size() < 2) continue;
    std::vector<ir::PointwiseStep> steps;
    std::vector<int> inputs = {x};
    for (const Link& l : links) {
      steps.push_back(l.step);
      if (l.step.binary()) inputs.push_back(l.operand);
    }
    ir::Node& last = g.nodes[size_t(nodes.back())];
    last.op_type = "Pointwise";
    last.domain = "segmux";
    last.inputs = inputs;
    last.attrs.clear();
    last.attrs[ir::kPointwiseSteps] = ir::format_pointwise_steps(steps);
    last.name += "/pointwise";
    for (size_t i = 0; i + 1 < nodes.size(); ++i) m.remove(nodes[i]);
    changed = true;
  }
  m.commit();
  return changed;
}

}  // namespace segmux::compiler
