// x * 0.5 * (1 + Erf(x / sqrt 2)) -> segmux Gelu(x).
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"

namespace segmux::compiler {

bool fuse_gelu(ir::Graph& g) {
  fuse::Matcher m(g);
  constexpr double kSqrt2 = 1.4142135623730951, kInvSqrt2 = 0.7071067811865476;
  bool changed = false;
  for (size_t e = 0; e < g.nodes.size(); ++e) {
    const ir::Node& erf = g.nodes[e];
    if (m.removed[e] || !erf.domain.empty() || erf.op_type != "Erf" || erf.inputs.size() != 1) continue;
    // x / sqrt2 or x * (1/sqrt2)
    int scaled = erf.inputs[0];
    int pd = m.producer(scaled);
    if (pd < 0 || !m.internal(scaled)) continue;
    const ir::Node& d = g.nodes[size_t(pd)];
    int x = -1;
    if (d.domain.empty() && d.op_type == "Div" && m.scalar_near(d.inputs[1], kSqrt2)) x = d.inputs[0];
    if (d.domain.empty() && d.op_type == "Mul") {
      if (m.scalar_near(d.inputs[1], kInvSqrt2))
        x = d.inputs[0];
      else if (m.scalar_near(d.inputs[0], kInvSqrt2))
        x = d.inputs[1];
    }
    if (x < 0 || g.value(x).dtype != DType::f32) continue;
    // 1 + erf
    int add = m.sole_consumer(erf.outputs[0], "Add");
    if (add < 0 || !m.scalar_near(fuse::Matcher::other(g.nodes[size_t(add)], erf.outputs[0]), 1.0)) continue;
    int one_plus = g.nodes[size_t(add)].outputs[0];
    int m1 = m.sole_consumer(one_plus, "Mul");
    if (m1 < 0) continue;
    const int o1 = fuse::Matcher::other(g.nodes[size_t(m1)], one_plus);
    int final_node = -1;
    std::vector<int> inner = {pd, int(e), add};
    if (o1 == x) {
      // Mul(x, 1+erf) -> Mul(., 0.5)
      int m2 = m.sole_consumer(g.nodes[size_t(m1)].outputs[0], "Mul");
      if (m2 < 0 || !m.scalar_near(fuse::Matcher::other(g.nodes[size_t(m2)], g.nodes[size_t(m1)].outputs[0]), 0.5))
        continue;
      inner.push_back(m1);
      final_node = m2;
    } else if (m.scalar_near(o1, 0.5)) {
      // Mul(1+erf, 0.5) -> Mul(., x)
      int m2 = m.sole_consumer(g.nodes[size_t(m1)].outputs[0], "Mul");
      if (m2 < 0 || fuse::Matcher::other(g.nodes[size_t(m2)], g.nodes[size_t(m1)].outputs[0]) != x) continue;
      inner.push_back(m1);
      final_node = m2;
    } else {
      // Mul(Mul(x, 0.5), 1+erf)
      int ph = m.producer(o1);
      if (ph < 0 || !m.internal(o1)) continue;
      const ir::Node& h = g.nodes[size_t(ph)];
      if (!h.domain.empty() || h.op_type != "Mul" || fuse::Matcher::other(h, x) == x ||
          (h.inputs[0] != x && h.inputs[1] != x) || !m.scalar_near(fuse::Matcher::other(h, x), 0.5))
        continue;
      inner.push_back(ph);
      final_node = m1;
    }
    ir::Node& f = g.nodes[size_t(final_node)];
    f.op_type = "Gelu";
    f.domain = "segmux";
    f.inputs = {x};
    f.attrs.clear();
    f.name += "/gelu";
    for (int n : inner) m.remove(n);
    changed = true;
  }
  m.commit();
  return changed;
}

}  // namespace segmux::compiler
