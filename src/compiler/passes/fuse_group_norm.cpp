// Reshape -> InstanceNormalization -> Reshape [-> Mul(gamma) -> Add(beta)] -> segmux GroupNorm.
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"

namespace segmux::compiler {

namespace {
// Per-channel values of a constant broadcast against [N, C, spatial...] ([C,1,..] or [1,C,1,..]);
// false when it is not per-channel.
bool per_channel(const ir::Graph& g, int v, int64_t C, size_t x_rank, Tensor* out) {
  const Tensor* t = g.initializer(v);
  if (!t || t->dtype() != DType::f32 || t->numel() != C || size_t(t->rank()) > x_rank) return false;
  // The channel axis of x is 1; right-aligned, t's axis (rank - (x_rank - 1)) must hold C.
  const int axis = t->rank() - int(x_rank - 1);
  if (C != 1 && (axis < 0 || t->dim(axis) != C)) return false;
  *out = t->reshaped({C});
  return true;
}
bool all_equal(const Tensor* t, double v) {
  if (!t) return false;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (t->get_as_double(i) != v) return false;
  return true;
}
}  // namespace

bool fuse_group_norm(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t in_idx = 0; in_idx < g.nodes.size(); ++in_idx) {
    const ir::Node& inorm = g.nodes[in_idx];
    if (m.removed[in_idx] || !inorm.domain.empty() || inorm.op_type != "InstanceNormalization" ||
        inorm.inputs.size() != 3)
      continue;
    const ir::Node* r1 = m.node_of(inorm.inputs[0], "Reshape");
    if (!r1 || !m.internal(inorm.inputs[0])) continue;
    const int x = r1->inputs[0];
    const ir::Value& xv = g.value(x);
    const ir::Value& grouped = g.value(inorm.inputs[0]);
    if (xv.dtype != DType::f32 || !xv.has_shape || xv.shape.size() < 2 || !grouped.has_shape ||
        grouped.shape.size() != 3)
      continue;
    const int64_t N = xv.shape[0], C = xv.shape[1], G = grouped.shape[1];
    if (grouped.shape[0] != N || G < 1 || C % G != 0 || shape_numel(grouped.shape) != shape_numel(xv.shape)) continue;
    if (!all_equal(g.initializer(inorm.inputs[1]), 1.0) || !all_equal(g.initializer(inorm.inputs[2]), 0.0)) continue;
    int r2 = m.sole_consumer(inorm.outputs[0], "Reshape");
    if (r2 < 0) continue;
    const int restored = g.nodes[size_t(r2)].outputs[0];
    if (!g.value(restored).has_shape || g.value(restored).shape != xv.shape) continue;
    std::vector<int> inner = {m.node_index(r1), int(in_idx)};
    int final_node = r2;
    Tensor gamma = Tensor::from_vector<float>({C}, std::vector<float>(size_t(C), 1.f));
    Tensor beta(DType::f32, {C});
    int mul = m.sole_consumer(restored, "Mul");
    if (mul >= 0 && per_channel(g, fuse::Matcher::other(g.nodes[size_t(mul)], restored), C, xv.shape.size(), &gamma)) {
      inner.push_back(r2);
      final_node = mul;
      const int scaled = g.nodes[size_t(mul)].outputs[0];
      int add = m.sole_consumer(scaled, "Add");
      if (add >= 0 && per_channel(g, fuse::Matcher::other(g.nodes[size_t(add)], scaled), C, xv.shape.size(), &beta)) {
        inner.push_back(mul);
        final_node = add;
      }
    }
    const float eps = inorm.attr_float("epsilon", 1e-5f);
    const std::string base = g.nodes[size_t(final_node)].name;
    int gv = fuse::add_constant(g, gamma.clone(), base + "/gamma");
    int bv = fuse::add_constant(g, beta.clone(), base + "/beta");
    ir::Node& f = g.nodes[size_t(final_node)];
    f.op_type = "GroupNorm";
    f.domain = "segmux";
    f.inputs = {x, gv, bv};
    f.attrs = {{"num_groups", G}, {"epsilon", eps}};
    f.name = base + "/group_norm";
    for (int n : inner) m.remove(n);
    changed = true;
  }
  m.commit();
  return changed;
}

}  // namespace segmux::compiler
