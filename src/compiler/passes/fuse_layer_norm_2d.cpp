// LayerNorm over the channel axis of [N, C, spatial...] (SAM's LayerNorm2d, nine element-wise and
// reduction nodes as exported) -> Transpose to channels-last, LayerNormalization over the last axis,
// Transpose back; then pairs of consecutive transposes merge (the ConvNeXt blocks transpose to
// channels-last right after the norm, so that pair cancels).
#include <algorithm>

#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"
#include "ir/static_shape.h"

namespace segmux::compiler {

namespace {

// ReduceMean over axis 1 only, keepdims, of a value of rank >= 3.
bool channel_mean(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || n.op_type != "ReduceMean" || n.inputs.empty() || n.attr_int("keepdims", 1) != 1)
    return false;
  const ir::Value& x = g.value(n.inputs[0]);
  if (!ir::has_static_shape(x) || x.shape.size() < 3 || x.dtype != DType::f32) return false;
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
    const Tensor* a = g.initializer(n.inputs[1]);
    if (!a || a->dtype() != DType::i64 || !axes.empty()) return false;
    axes.assign(a->data<int64_t>(), a->data<int64_t>() + a->numel());
  }
  const int64_t r = int64_t(x.shape.size());
  return axes.size() == 1 && (axes[0] == 1 || axes[0] == 1 - r);
}

// A constant of C values broadcasting over the channel axis of a rank-r value ([C, 1, ...] with r - 2
// trailing ones, or that with leading ones), as a [C] tensor.
bool channel_constant(const ir::Graph& g, int v, int64_t C, size_t r, Tensor* out) {
  const Tensor* t = g.initializer(v);
  if (!t || t->dtype() != DType::f32 || t->numel() != C || size_t(t->rank()) > r || size_t(t->rank()) < r - 1)
    return false;
  const int axis = t->rank() - int(r - 1);
  if (t->dim(axis) != C) return false;
  *out = t->reshaped({C}).clone();
  return true;
}

int n_consumers(const fuse::Matcher& m, int v) {
  std::vector<int> c = m.consumers[size_t(v)];
  std::sort(c.begin(), c.end());
  return int(std::unique(c.begin(), c.end()) - c.begin());
}

// Rewrites one LayerNorm2d pattern ending at the Add after ReduceMean node `rm`; false if it is not one.
bool rewrite_one(ir::Graph& g, fuse::Matcher& m, int rm) {
  const ir::Node& mean = g.nodes[size_t(rm)];
  if (!channel_mean(g, mean) || !m.internal(mean.outputs[0])) return false;
  const int x = mean.inputs[0];
  const Shape shape = g.value(x).shape;
  const int64_t C = shape[1];
  const size_t r = shape.size();
  const int sub = m.consumers[size_t(mean.outputs[0])][0];
  const ir::Node& s = g.nodes[size_t(sub)];
  if (m.removed[size_t(sub)] || !s.domain.empty() || s.op_type != "Sub" || s.inputs[0] != x ||
      s.inputs[1] != mean.outputs[0])
    return false;
  const int d = s.outputs[0];
  if (m.is_output[size_t(d)] || n_consumers(m, d) != 2) return false;
  int sq = -1, div = -1;
  for (int c : m.consumers[size_t(d)]) {
    const ir::Node& n = g.nodes[size_t(c)];
    if (m.removed[size_t(c)] || !n.domain.empty()) return false;
    if (n.op_type == "Mul" && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d)
      sq = c;
    else if (n.op_type == "Pow" && n.inputs[0] == d && m.scalar_near(n.inputs[1], 2.0))
      sq = c;
    else if (n.op_type == "Div" && n.inputs[0] == d)
      div = c;
    else
      return false;
  }
  if (sq < 0 || div < 0) return false;
  const int var_node = m.sole_consumer(g.nodes[size_t(sq)].outputs[0], "ReduceMean");
  if (var_node < 0 || !channel_mean(g, g.nodes[size_t(var_node)])) return false;
  const int eps_node = m.sole_consumer(g.nodes[size_t(var_node)].outputs[0], "Add");
  double eps = 0;
  if (eps_node < 0 ||
      !m.scalar(fuse::Matcher::other(g.nodes[size_t(eps_node)], g.nodes[size_t(var_node)].outputs[0]), &eps))
    return false;
  const int sqrt_node = m.sole_consumer(g.nodes[size_t(eps_node)].outputs[0], "Sqrt");
  if (sqrt_node < 0 || !m.internal(g.nodes[size_t(sqrt_node)].outputs[0])) return false;
  if (g.nodes[size_t(div)].inputs[1] != g.nodes[size_t(sqrt_node)].outputs[0]) return false;
  const int normed = g.nodes[size_t(div)].outputs[0];
  const int mul = m.sole_consumer(normed, "Mul");
  Tensor gamma, beta;
  if (mul < 0 || !channel_constant(g, fuse::Matcher::other(g.nodes[size_t(mul)], normed), C, r, &gamma)) return false;
  const int scaled = g.nodes[size_t(mul)].outputs[0];
  const int add = m.sole_consumer(scaled, "Add");
  if (add < 0 || !channel_constant(g, fuse::Matcher::other(g.nodes[size_t(add)], scaled), C, r, &beta)) return false;

  std::vector<int64_t> to_last = {0}, to_first = {0, int64_t(r) - 1};
  for (size_t i = 2; i < r; ++i) to_last.push_back(int64_t(i));
  to_last.push_back(1);
  for (size_t i = 1; i + 1 < r; ++i) to_first.push_back(int64_t(i));
  Shape last_shape;
  for (int64_t p : to_last) last_shape.push_back(shape[size_t(p)]);
  const std::string base = g.nodes[size_t(add)].name;
  const int xt = g.add_value(base + "/channels_last", DType::f32, last_shape);
  const int yt = g.add_value(base + "/layer_norm", DType::f32, last_shape);
  const int gv = fuse::add_constant(g, gamma, base + "/scale");
  const int bv = fuse::add_constant(g, beta, base + "/bias");
  // The first pattern node becomes the transpose in, the Sub the norm, the final Add the transpose out
  // (it keeps the output value): node order stays topological.
  ir::Node& t_in = g.nodes[size_t(rm)];
  t_in.op_type = "Transpose";
  t_in.inputs = {x};
  t_in.outputs = {xt};
  t_in.attrs = {{"perm", to_last}};
  t_in.name = base + "/to_channels_last";
  ir::Node& ln = g.nodes[size_t(sub)];
  ln.op_type = "LayerNormalization";
  ln.inputs = {xt, gv, bv};
  ln.outputs = {yt};
  ln.attrs = {{"axis", int64_t(-1)}, {"epsilon", float(eps)}};
  ln.name = base + "/layer_norm_2d";
  ir::Node& t_out = g.nodes[size_t(add)];
  t_out.op_type = "Transpose";
  t_out.inputs = {yt};
  t_out.attrs = {{"perm", to_first}};
  t_out.name = base + "/to_channels_first";
  g.value(xt).producer = rm;
  g.value(yt).producer = sub;
  for (int n : {sq, var_node, eps_node, sqrt_node, div, mul}) m.remove(n);
  return true;
}

}  // namespace

bool fuse_layer_norm_2d(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!m.removed[i] && rewrite_one(g, m, int(i))) changed = true;
  m.commit();
  if (changed) merge_transposes(g);
  return changed;
}

namespace {
// Merges one Transpose of a Transpose (the inner one consumed only there); false when there is none.
bool merge_one_transpose_pair(ir::Graph& g) {
  fuse::Matcher m(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& outer = g.nodes[i];
    if (!outer.domain.empty() || outer.op_type != "Transpose" || outer.inputs.empty()) continue;
    const ir::Node* inner = m.node_of(outer.inputs[0], "Transpose");
    if (!inner || !m.internal(outer.inputs[0])) continue;
    const std::vector<int64_t> p1 = inner->attr_ints("perm"), p2 = outer.attr_ints("perm");
    if (p1.empty() || p1.size() != p2.size()) continue;  // default (reversing) perms stay
    std::vector<int64_t> composed;
    bool identity = true, valid = true;
    for (size_t k = 0; k < p2.size(); ++k) {
      valid &= p2[k] >= 0 && size_t(p2[k]) < p1.size();
      if (!valid) break;
      composed.push_back(p1[size_t(p2[k])]);
      identity &= composed.back() == int64_t(k);
    }
    if (!valid) continue;
    const int x = inner->inputs[0];
    m.remove(m.node_index(inner));
    if (identity && !m.is_output[size_t(outer.outputs[0])]) {
      replace_uses(g, outer.outputs[0], x);
      m.remove(int(i));
    } else {
      outer.inputs[0] = x;
      outer.attrs["perm"] = composed;
    }
    m.commit();
    return true;
  }
  return false;
}
}  // namespace

bool merge_transposes(ir::Graph& g) {
  bool changed = false;
  while (merge_one_transpose_pair(g)) changed = true;
  if (changed) g.compact();
  return changed;
}

}  // namespace segmux::compiler
