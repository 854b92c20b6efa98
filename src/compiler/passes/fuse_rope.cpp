// Rotary embedding on interleaved pairs, as src/models/sam31/layers.cpp apply_rope emits it:
// Reshape(x, [..., L, D/2, 2]) -> Split(last, [1, 1]) -> re = a*cos - b*sin, im = a*sin + b*cos ->
// Concat(last) -> Reshape(x's shape)  ==>  segmux Rope(x, cos, sin).
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"

namespace segmux::compiler {

namespace {
// Mul(p, q) with {p, q} == {a, t}: returns true and the constant table t.
bool mul_of(const fuse::Matcher& m, int v, int a, int* table) {
  const ir::Node* n = m.node_of(v, "Mul");
  if (!n || !m.internal(v) || n->inputs.size() != 2) return false;
  if (n->inputs[0] == a)
    *table = n->inputs[1];
  else if (n->inputs[1] == a)
    *table = n->inputs[0];
  else
    return false;
  return m.g.initializer(*table) != nullptr;
}
// Table constant of shape [1.., L, half, 1].
bool table_shape(const ir::Graph& g, int v, int64_t L, int64_t half) {
  const Tensor* t = g.initializer(v);
  if (!t || t->dtype() != DType::f32 || t->rank() < 3) return false;
  for (int d = 0; d < t->rank() - 3; ++d)
    if (t->dim(d) != 1) return false;
  return t->dim(-3) == L && t->dim(-2) == half && t->dim(-1) == 1;
}
}  // namespace

bool fuse_rope(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    const ir::Node& cat = g.nodes[ci];
    if (m.removed[ci] || !cat.domain.empty() || cat.op_type != "Concat" || cat.inputs.size() != 2) continue;
    const ir::Value& cv = g.value(cat.outputs[0]);
    if (!cv.has_shape || cv.shape.size() < 3 || cv.shape.back() != 2) continue;
    const int64_t axis = cat.attr_int("axis", 0);
    if (axis != -1 && axis != int64_t(cv.shape.size()) - 1) continue;
    int r2 = m.sole_consumer(cat.outputs[0], "Reshape");
    if (r2 < 0) continue;
    const ir::Node* sub = m.node_of(cat.inputs[0], "Sub");
    const ir::Node* add = m.node_of(cat.inputs[1], "Add");
    if (!sub || !add || !m.internal(cat.inputs[0]) || !m.internal(cat.inputs[1])) continue;
    // a, b: the two outputs of one Split of Reshape(x).
    const ir::Node* m1 = m.node_of(sub->inputs[0], "Mul");
    if (!m1) continue;
    const int a_guess[2] = {m1->inputs[0], m1->inputs[1]};
    const ir::Node* split = nullptr;
    for (int a : a_guess) {
      const ir::Node* s = m.node_of(a, "Split");
      if (s && s->outputs.size() == 2 && s->outputs[0] == a) split = s;
    }
    if (!split) continue;
    const int a = split->outputs[0], b = split->outputs[1];
    const ir::Value &av = g.value(a), &bv = g.value(b);
    if (!av.has_shape || !bv.has_shape || av.shape != bv.shape || av.shape.size() != cv.shape.size() ||
        av.shape.back() != 1)
      continue;
    const int64_t split_axis = split->attr_int("axis", 0);
    if (split_axis != -1 && split_axis != int64_t(av.shape.size()) - 1) continue;
    if (m.is_output[size_t(a)] || m.is_output[size_t(b)] || m.consumers[size_t(a)].size() != 2 ||
        m.consumers[size_t(b)].size() != 2)
      continue;
    int cos1, sin1, sin2, cos2;
    if (!mul_of(m, sub->inputs[0], a, &cos1) || !mul_of(m, sub->inputs[1], b, &sin1)) continue;
    // im = a*sin + b*cos, in either order.
    int ia = add->inputs[0], ib = add->inputs[1];
    if (!mul_of(m, ia, a, &sin2)) std::swap(ia, ib);
    if (!mul_of(m, ia, a, &sin2) || !mul_of(m, ib, b, &cos2)) continue;
    if (cos1 != cos2 || sin1 != sin2) continue;
    const ir::Node* r1 = m.node_of(split->inputs[0], "Reshape");
    if (!r1 || !m.internal(split->inputs[0])) continue;
    const int x = r1->inputs[0];
    const ir::Value& xv = g.value(x);
    const int out = g.nodes[size_t(r2)].outputs[0];
    if (!xv.has_shape || xv.dtype != DType::f32 || xv.shape.size() < 2 || !g.value(out).has_shape ||
        g.value(out).shape != xv.shape)
      continue;
    const int64_t L = xv.shape[xv.shape.size() - 2], half = xv.shape.back() / 2;
    if (xv.shape.back() % 2 != 0 || !table_shape(g, cos1, L, half) || !table_shape(g, sin1, L, half)) continue;
    std::vector<int> inner = {m.node_index(r1),           m.node_index(split),        m.producer(sub->inputs[0]),
                              m.producer(sub->inputs[1]), m.producer(add->inputs[0]), m.producer(add->inputs[1]),
                              m.node_index(sub),          m.node_index(add),          int(ci)};
    ir::Node& f = g.nodes[size_t(r2)];
    f.op_type = "Rope";
    f.domain = "segmux";
    f.inputs = {x, cos1, sin1};
    f.attrs.clear();
    f.name += "/rope";
    for (int n : inner) m.remove(n);
    changed = true;
  }
  m.commit();
  return changed;
}

}  // namespace segmux::compiler
