// MatMul(q, Transpose(k)) -> [Mul|Div scalar] -> [Add mask] -> Softmax(-1) -> MatMul(v) -> segmux Attention.
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"

namespace segmux::compiler {

bool fuse_attention(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t si = 0; si < g.nodes.size(); ++si) {
    const ir::Node& sm = g.nodes[si];
    if (m.removed[si] || !sm.domain.empty() || sm.op_type != "Softmax") continue;
    const int scores_in = sm.inputs[0];
    const ir::Value& sv = g.value(scores_in);
    if (!sv.has_shape || sv.shape.size() < 2 || sv.dtype != DType::f32) continue;
    const int64_t rank = int64_t(sv.shape.size());
    const int64_t axis = sm.attr_int("axis", -1);
    if (axis != -1 && axis != rank - 1) continue;
    // Softmax -> MatMul(p, v)
    int pv = m.sole_consumer(sm.outputs[0], "MatMul");
    if (pv < 0 || g.nodes[size_t(pv)].inputs[0] != sm.outputs[0]) continue;
    const int v = g.nodes[size_t(pv)].inputs[1];
    std::vector<int> inner = {int(si)};
    // Optional Add(mask).
    int cur = scores_in, mask = -1;
    if (const ir::Node* add = m.node_of(cur, "Add"); add && m.internal(cur)) {
      // The mask is the operand that is not produced by the scaled-scores chain.
      for (int side = 0; side < 2; ++side) {
        const int s = add->inputs[size_t(side)], o = add->inputs[size_t(1 - side)];
        const int ps = m.producer(s);
        if (ps < 0) continue;
        const std::string& op = g.nodes[size_t(ps)].op_type;
        if (op != "MatMul" && op != "Mul" && op != "Div") continue;
        const ir::Value& mv = g.value(o);
        if (mv.dtype != DType::f32 || !mv.has_shape || int64_t(mv.shape.size()) > rank) continue;
        // The mask must not enlarge the scores (it broadcasts into them).
        if (!g.value(s).has_shape || g.value(s).shape != sv.shape) continue;
        mask = o;
        inner.push_back(m.node_index(add));
        cur = s;
        break;
      }
      if (mask < 0) continue;
    }
    // Optional scale.
    double scale = 1.0;
    if (const ir::Node* mul = m.node_of(cur, "Mul"); mul && m.internal(cur)) {
      double c;
      if (m.scalar(mul->inputs[1], &c))
        cur = mul->inputs[0];
      else if (m.scalar(mul->inputs[0], &c))
        cur = mul->inputs[1];
      else
        continue;
      scale = c;
      inner.push_back(m.node_index(mul));
    } else if (const ir::Node* div = m.node_of(cur, "Div"); div && m.internal(cur)) {
      double c;
      if (!m.scalar(div->inputs[1], &c) || c == 0) continue;
      scale = 1.0 / c;
      cur = div->inputs[0];
      inner.push_back(m.node_index(div));
    }
    // MatMul(q, kt) with kt = Transpose(k) swapping the last two dims.
    const ir::Node* qk = m.node_of(cur, "MatMul");
    if (!qk || !m.internal(cur)) continue;
    const int q = qk->inputs[0], kt = qk->inputs[1];
    const ir::Node* tr = m.node_of(kt, "Transpose");
    if (!tr) continue;
    const int k = tr->inputs[0];
    const ir::Value &qv = g.value(q), &kv = g.value(k), &vv = g.value(v);
    if (!qv.has_shape || !kv.has_shape || !vv.has_shape || int64_t(qv.shape.size()) != rank ||
        kv.shape.size() != qv.shape.size() || vv.shape.size() != qv.shape.size())
      continue;
    if (qv.dtype != DType::f32 || kv.dtype != DType::f32 || vv.dtype != DType::f32) continue;
    std::vector<int64_t> perm = tr->attr_ints("perm");
    bool swap_last = int64_t(perm.size()) == rank;
    for (int64_t i = 0; swap_last && i < rank - 2; ++i) swap_last = perm[size_t(i)] == i;
    if (!swap_last || perm[size_t(rank - 2)] != rank - 1 || perm[size_t(rank - 1)] != rank - 2) continue;
    bool same_batch = true;
    for (int64_t i = 0; i < rank - 2; ++i)
      same_batch &= qv.shape[size_t(i)] == kv.shape[size_t(i)] && qv.shape[size_t(i)] == vv.shape[size_t(i)];
    if (!same_batch) continue;
    inner.push_back(m.node_index(qk));
    if (m.internal(kt)) inner.push_back(m.node_index(tr));
    ir::Node& f = g.nodes[size_t(pv)];
    f.op_type = "Attention";
    f.domain = "segmux";
    f.inputs = {q, k, v};
    if (mask >= 0) f.inputs.push_back(mask);
    f.attrs = {{"scale", float(scale)}};
    f.name += "/attention";
    for (int n : inner) m.remove(n);
    changed = true;
  }
  m.commit();
  return changed;
}

}  // namespace segmux::compiler
