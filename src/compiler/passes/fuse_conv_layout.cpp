// Channels-last convolutions: a 2-D Conv whose output only goes to a Transpose to channels-last, or
// whose input only comes from a Transpose to channels-first, becomes a segmux Conv reading / writing
// [N, H, W, C] and the Transpose disappears. oneDNN's convolutions run channels-last anyway, so the
// layout changes around them (a reorder inside the kernel plus our Transpose) were pure copies; after
// fuse_layer_norm_2d the memory encoder's conv -> LayerNorm2d -> GELU -> conv chain keeps one layout.
// A GELU or ReLU between the Transpose and the Conv moves before the Transpose first. Two convs in a
// row keep channels-last between them.
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"
#include "ir/static_shape.h"

namespace segmux::compiler {

namespace {

const std::vector<int64_t> kToLast = {0, 2, 3, 1}, kToFirst = {0, 3, 1, 2};

bool is_transpose(const ir::Node& n, const std::vector<int64_t>& perm) {
  return n.domain.empty() && n.op_type == "Transpose" && n.inputs.size() == 1 && n.attr_ints("perm") == perm;
}

// A 2-D f32 Conv with a constant 4-D weight (what the oneDNN kernel takes), ONNX or already segmux.
bool convertible_conv(const ir::Graph& g, const ir::Node& n) {
  const bool onnx = n.domain.empty() && n.op_type == "Conv";
  const bool ours = n.domain == "segmux" && n.op_type == "Conv";
  if ((!onnx && !ours) || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  const Tensor* w = g.initializer(n.inputs[1]);
  const ir::Value& y = g.value(n.outputs[0]);
  return w && w->rank() == 4 && w->dtype() == DType::f32 && ir::has_static_shape(y) && y.shape.size() == 4 &&
         y.dtype == DType::f32;
}

void make_segmux_conv(ir::Node& n) {
  if (n.domain == "segmux") return;
  n.domain = "segmux";
  n.attrs.emplace("channels_last_in", int64_t(0));
  n.attrs.emplace("channels_last_out", int64_t(0));
}

// The single consumer node of v (v not a graph output), else -1.
int only_consumer(const fuse::Matcher& m, int v) {
  if (!m.internal(v)) return -1;
  const int c = m.consumers[size_t(v)][0];
  return m.removed[size_t(c)] ? -1 : c;
}

// Conv -> Transpose(to channels-last): the conv writes channels-last.
bool conv_writes_last(ir::Graph& g, fuse::Matcher& m, int ci) {
  ir::Node& conv = g.nodes[size_t(ci)];
  if (!convertible_conv(g, conv) || conv.attr_int("channels_last_out", 0) != 0) return false;
  const int ti = only_consumer(m, conv.outputs[0]);
  if (ti < 0 || !is_transpose(g.nodes[size_t(ti)], kToLast)) return false;
  make_segmux_conv(conv);
  conv.attrs["channels_last_out"] = int64_t(1);
  conv.outputs[0] = g.nodes[size_t(ti)].outputs[0];
  m.remove(ti);
  return true;
}

// Transpose(to channels-first) -> Conv: the conv reads channels-last.
bool conv_reads_last(ir::Graph& g, fuse::Matcher& m, int ci) {
  ir::Node& conv = g.nodes[size_t(ci)];
  if (!convertible_conv(g, conv) || conv.attr_int("channels_last_in", 0) != 0) return false;
  const int ti = m.producer(conv.inputs[0]);
  if (ti < 0 || !is_transpose(g.nodes[size_t(ti)], kToFirst) || only_consumer(m, conv.inputs[0]) != ci) return false;
  const int src = g.nodes[size_t(ti)].inputs[0];
  if (g.value(src).dtype != DType::f32 || !ir::has_static_shape(g.value(src))) return false;
  make_segmux_conv(conv);
  conv.attrs["channels_last_in"] = int64_t(1);
  conv.inputs[0] = src;
  m.remove(ti);
  return true;
}

// Conv -> Conv (the second the only reader of the first's output, as its input): the value between
// them is stored channels-last, so neither conv reorders it (the FPN necks' 1x1 -> 3x3 convs at the
// largest scales: ~10 ms of reorders per pair at 288 x 288).
bool conv_to_conv_last(ir::Graph& g, fuse::Matcher& m, int ci) {
  ir::Node& a = g.nodes[size_t(ci)];
  if (!convertible_conv(g, a) || a.attr_int("channels_last_out", 0) != 0) return false;
  const int y = a.outputs[0];
  const int bi = only_consumer(m, y);
  if (bi < 0) return false;
  ir::Node& b = g.nodes[size_t(bi)];
  if (!convertible_conv(g, b) || b.attr_int("channels_last_in", 0) != 0 || b.inputs[0] != y) return false;
  for (size_t k = 1; k < b.inputs.size(); ++k)
    if (b.inputs[k] == y) return false;
  make_segmux_conv(a);
  make_segmux_conv(b);
  a.attrs["channels_last_out"] = int64_t(1);
  b.attrs["channels_last_in"] = int64_t(1);
  Shape& s = g.value(y).shape;
  s = {s[0], s[2], s[3], s[1]};
  return true;
}

// Transpose(to channels-first) -> GELU/ReLU -> Conv: the activation moves before the Transpose.
bool activation_before_transpose(ir::Graph& g, fuse::Matcher& m, int ti) {
  const ir::Node& t = g.nodes[size_t(ti)];
  if (!is_transpose(t, kToFirst)) return false;
  const int ai = only_consumer(m, t.outputs[0]);
  if (ai < 0) return false;
  const ir::Node& a = g.nodes[size_t(ai)];
  const bool unary = (a.domain == "segmux" && a.op_type == "Gelu") || (a.domain.empty() && a.op_type == "Relu");
  if (!unary || a.inputs.size() != 1 || a.outputs.size() != 1) return false;
  const int ci = only_consumer(m, a.outputs[0]);
  if (ci < 0 || !convertible_conv(g, g.nodes[size_t(ci)]) || g.nodes[size_t(ci)].inputs[0] != a.outputs[0])
    return false;
  const int src = t.inputs[0];
  const ir::Value& sv = g.value(src);
  const int mid = g.add_value(a.name + "/channels_last", sv.dtype, sv.shape);
  // Node ti becomes the activation on the channels-last value, node ai the Transpose (order stays valid).
  ir::Node act = g.nodes[size_t(ai)];
  ir::Node tr = g.nodes[size_t(ti)];
  act.inputs = {src};
  act.outputs = {mid};
  tr.inputs = {mid};
  tr.outputs = g.nodes[size_t(ai)].outputs;
  g.nodes[size_t(ti)] = act;
  g.nodes[size_t(ai)] = tr;
  g.value(mid).producer = ti;
  g.value(tr.outputs[0]).producer = ai;
  return true;
}

// One rewrite, or false when none applies.
bool rewrite_one(ir::Graph& g) {
  fuse::Matcher m(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (activation_before_transpose(g, m, int(i))) return true;
    if (conv_writes_last(g, m, int(i)) || conv_reads_last(g, m, int(i)) || conv_to_conv_last(g, m, int(i))) {
      m.commit();
      return true;
    }
  }
  return false;
}

}  // namespace

bool conv_channels_last(ir::Graph& g) {
  bool changed = false;
  while (rewrite_one(g)) changed = true;
  if (changed) g.compact();
  return changed;
}

}  // namespace segmux::compiler
