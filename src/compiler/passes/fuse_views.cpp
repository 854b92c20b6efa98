// Strided views (ir/strided_view.h) for the inputs of segmux Attention (q, k, v) and Rope (x), and a
// permuted output for Attention: the ViT's qkv Linear -> Reshape -> Transpose -> Split -> Rope /
// Attention and Attention -> Transpose -> Reshape -> proj Linear then move no bytes between the
// Linears and the attention. Each of those Transposes ran at memcpy's rate and cost ~6.5 ms per ViT
// block at full size (bench_transpose).
//
// An input is followed back through the nodes that only select elements of their input (Reshape,
// Squeeze, Unsqueeze, Flatten, Identity, Transpose, Split) as long as the composition stays one strided
// view with a unit innermost stride; the node then reads the furthest such source. Nodes that no one
// reads any more go with dead-code elimination.
#include "compiler/passes.h"
#include "compiler/passes/fuse_util.h"
#include "ir/static_shape.h"
#include "ir/strided_view.h"

namespace segmux::compiler {
namespace {

// How a node's output v lies in its input: element with mixed-radix digits (over v's shape) i_d is
// input element base + sum_d i_d * step[d]; flat: the output is the input's elements in order.
struct Selection {
  int source = -1;
  bool flat = false;
  int64_t base = 0;
  std::vector<int64_t> step;
};

bool static_f32(const ir::Graph& g, int v) {
  return v >= 0 && ir::has_static_shape(g.value(v)) && g.value(v).dtype == DType::f32;
}

// Split sizes of node n (attribute, constant second input, or equal parts).
std::vector<int64_t> split_sizes(const ir::Graph& g, const ir::Node& n, int64_t dim) {
  if (n.has_attr("split")) return n.attr_ints("split");
  if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
    const Tensor* t = g.initializer(n.inputs[1]);
    if (!t || t->rank() != 1) return {};
    std::vector<int64_t> s;
    for (int64_t i = 0; i < t->numel(); ++i) s.push_back(int64_t(t->get_as_double(i)));
    return s;
  }
  const int64_t parts = int64_t(n.outputs.size());
  if (parts == 0 || dim % parts != 0) return {};
  return std::vector<int64_t>(size_t(parts), dim / parts);
}

bool selection_of(const fuse::Matcher& m, int v, Selection* s) {
  const int p = m.producer(v);
  if (p < 0) return false;
  const ir::Node& n = m.g.nodes[size_t(p)];
  if (!n.domain.empty() || n.inputs.empty() || !static_f32(m.g, n.inputs[0]) || !static_f32(m.g, v)) return false;
  const int u = n.inputs[0];
  const Shape& us = m.g.value(u).shape;
  const std::vector<int64_t> ustr = contiguous_strides(us);
  s->source = u;
  if (n.op_type == "Reshape" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze" || n.op_type == "Flatten" ||
      n.op_type == "Identity") {
    s->flat = shape_numel(us) == shape_numel(m.g.value(v).shape);
    return s->flat;
  }
  if (n.op_type == "Transpose") {
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm.empty())
      for (size_t d = us.size(); d-- > 0;) perm.push_back(int64_t(d));
    if (perm.size() != us.size()) return false;
    for (int64_t d : perm) s->step.push_back(ustr[size_t(d)]);
    return true;
  }
  if (n.op_type == "Split") {
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += int64_t(us.size());
    if (axis < 0 || axis >= int64_t(us.size())) return false;
    const std::vector<int64_t> sizes = split_sizes(m.g, n, us[size_t(axis)]);
    if (sizes.size() != n.outputs.size()) return false;
    int64_t start = 0;
    for (size_t k = 0; k < n.outputs.size() && n.outputs[k] != v; ++k) start += sizes[k];
    s->base = start * ustr[size_t(axis)];
    s->step = ustr;
    return true;
  }
  return false;
}

// The digits of x over shape (row-major mixed radix), or false when x is beyond the shape.
bool digits_of(int64_t x, const Shape& shape, std::vector<int64_t>* digits) {
  digits->assign(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] <= 0) return false;
    (*digits)[d] = x % shape[d];
    x /= shape[d];
  }
  return x == 0;
}

// view (over value v of shape vs) read through selection s: the view over s.source, or false when the
// composition is not one strided view (a carry between v's digits) or loses the unit innermost stride.
bool compose(const ir::StridedView& view, const Shape& vs, const Selection& s, ir::StridedView* out) {
  *out = view;
  if (s.flat) return true;
  std::vector<int64_t> off, reach(vs.size(), 0);
  if (!digits_of(view.offset, vs, &off)) return false;
  std::vector<std::vector<int64_t>> sd(view.strides.size());
  for (size_t k = 0; k < view.strides.size(); ++k) {
    // The stride of a size-1 dim is never used (and may point past v's last element): 0.
    if (!digits_of(view.shape[k] == 1 ? 0 : view.strides[k], vs, &sd[k])) return false;
    for (size_t d = 0; d < vs.size(); ++d) reach[d] += (view.shape[k] - 1) * sd[k][d];
  }
  for (size_t d = 0; d < vs.size(); ++d)
    if (off[d] + reach[d] >= vs[d]) return false;  // a carry: not linear in the digits
  out->offset = s.base;
  for (size_t d = 0; d < vs.size(); ++d) out->offset += off[d] * s.step[d];
  for (size_t k = 0; k < view.strides.size(); ++k) {
    out->strides[k] = 0;
    for (size_t d = 0; d < vs.size(); ++d) out->strides[k] += sd[k][d] * s.step[d];
  }
  return out->strides.back() == 1 || out->shape.back() == 1;
}

// Input i of node ni read through the furthest selection chain; true if it moved.
bool read_through(fuse::Matcher& m, int ni, int i) {
  ir::Node& n = m.g.nodes[size_t(ni)];
  int src = n.inputs[size_t(i)];
  if (!static_f32(m.g, src) || shape_numel(m.g.value(src).shape) == 0) return false;
  ir::StridedView view;
  if (auto v = ir::input_view(n, i)) {
    view = *v;
  } else {
    view.shape = m.g.value(src).shape;
    view.strides = contiguous_strides(view.shape);
  }
  bool moved = false;
  Selection s;
  ir::StridedView next;
  while (selection_of(m, src, &s) && compose(view, m.g.value(src).shape, s, &next)) {
    view = next;
    src = s.source;
    s = Selection{};
    moved = true;
  }
  if (!moved) return false;
  n.inputs[size_t(i)] = src;
  ir::set_input_view(n, i, view);
  return true;
}

// Attention -> Transpose keeping the last dim last (its only reader): the attention writes permuted.
bool write_permuted(fuse::Matcher& m, int ni) {
  ir::Node& n = m.g.nodes[size_t(ni)];
  if (n.has_attr(ir::kOutputPerm) || n.outputs.size() != 1) return false;
  const int y = n.outputs[0];
  const int ti = m.sole_consumer(y, "Transpose");
  if (ti < 0 || !static_f32(m.g, y)) return false;
  const std::vector<int64_t> perm = m.g.nodes[size_t(ti)].attr_ints("perm");
  if (!ir::check_output_perm(perm, m.g.value(y).shape.size()).empty()) return false;
  n.attrs[ir::kOutputPerm] = perm;
  n.outputs[0] = m.g.nodes[size_t(ti)].outputs[0];
  m.g.value(n.outputs[0]).producer = ni;
  m.remove(ti);
  return true;
}

// The CPU tiles read k and v once per tile of 384 queries; through a view their rows are scattered, which
// costs more than the copy it saves once they are read more than a few times (the detector's fusion
// encoder, 5184 queries: +5-15 % per attention; the ViT's 576-query windows: +1 %, against the 6.5 ms of
// Transposes it saves). So only attentions with at most this many queries per batch-head take views, and
// only the Ropes they read.
constexpr int64_t kMaxQueriesForViews = 1024;

bool few_queries(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.empty() || n.inputs[0] < 0 || !ir::has_static_shape(g.value(n.inputs[0]))) return false;
  const Shape q = ir::read_shape(n, 0, g.value(n.inputs[0]).shape);
  return q.size() >= 2 && q[q.size() - 2] <= kMaxQueriesForViews;
}

// The Rope's output is read only by such an attention (as q or k).
bool feeds_few_query_attention(const fuse::Matcher& m, const ir::Node& rope) {
  if (rope.outputs.size() != 1 || !m.internal(rope.outputs[0])) return false;
  const ir::Node& a = m.g.nodes[size_t(m.consumers[size_t(rope.outputs[0])][0])];
  return a.domain == "segmux" && a.op_type == "Attention" && few_queries(m.g, a);
}

}  // namespace

bool read_through_views(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ir::Node& n = g.nodes[ni];
    if (m.removed[ni] || n.domain != "segmux") continue;
    if (n.op_type == "Attention" && few_queries(g, n)) {
      for (int i = 0; i < 3 && i < int(n.inputs.size()); ++i) changed |= read_through(m, int(ni), i);
      changed |= write_permuted(m, int(ni));
    } else if (n.op_type == "Rope" && !n.inputs.empty() && feeds_few_query_attention(m, n)) {
      changed |= read_through(m, int(ni), 0);
    }
  }
  m.commit();
  if (changed) eliminate_dead_code(g);
  return changed;
}

}  // namespace segmux::compiler
