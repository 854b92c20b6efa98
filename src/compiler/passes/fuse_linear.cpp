// MatMul(x, W) + bias -> segmux Linear; Linear + Gelu or Relu -> activation; Linear + residual Add -> 4th
// input.
#include "compiler/passes/fuse_all.h"
#include "compiler/passes/fuse_util.h"
#include "ir/precision.h"

namespace segmux::compiler {

bool fuse_linear(ir::Graph& g) {
  bool changed = false;
  {
    fuse::Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& mm = g.nodes[i];
      if (m.removed[i] || !mm.domain.empty() || mm.op_type != "MatMul") continue;
      const Tensor* w = g.initializer(mm.inputs[1]);
      const ir::Value& xv = g.value(mm.inputs[0]);
      if (!w || w->rank() != 2 || w->dtype() != DType::f32 || xv.dtype != DType::f32 || !xv.has_shape ||
          xv.shape.size() < 2)
        continue;
      const int y = mm.outputs[0];
      int add = m.sole_consumer(y, "Add");
      const int bias = add >= 0 ? fuse::Matcher::other(g.nodes[size_t(add)], y) : -1;
      const Tensor* b = bias >= 0 ? g.initializer(bias) : nullptr;
      const bool row_bias = b && b->dtype() == DType::f32 && b->numel() == w->dim(1) && b->rank() >= 1 &&
                            size_t(b->rank()) <= xv.shape.size() && b->dim(-1) == w->dim(1);
      ir::Node& f = row_bias ? g.nodes[size_t(add)] : g.nodes[i];
      const int x = mm.inputs[0], wv = mm.inputs[1];
      if (row_bias) {
        f.inputs = {x, wv, bias};
        m.remove(int(i));
      } else {
        f.inputs = {x, wv};
      }
      f.op_type = "Linear";
      f.domain = "segmux";
      f.attrs.clear();
      f.name += "/linear";
      changed = true;
    }
    m.commit();
  }
  // Activation and residual.
  fuse::Matcher m(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (m.removed[i] || g.nodes[i].domain != "segmux" || g.nodes[i].op_type != "Linear") continue;
    int lin = int(i);
    const int y = g.nodes[size_t(lin)].outputs[0];
    if (m.internal(y)) {
      int c = m.consumers[size_t(y)][0];
      ir::Node& n = g.nodes[size_t(c)];
      // A GELU that rounds its input or output to bf16 stays on its own (oneDNN's post-op would not).
      const bool gelu = n.domain == "segmux" && n.op_type == "Gelu" && !n.has_attr(ir::kGeluRoundInput) &&
                        !n.has_attr(ir::kGeluRoundOutput);
      const bool relu = n.domain.empty() && n.op_type == "Relu" && g.value(y).dtype == DType::f32;
      if (!m.removed[size_t(c)] && (gelu || relu) && !g.nodes[size_t(lin)].has_attr("activation")) {
        // The activation node becomes the Linear (it owns the output value consumers read).
        ir::Node fused = g.nodes[size_t(lin)];
        fused.outputs = n.outputs;
        fused.name = n.name;
        fused.attrs["activation"] = std::string(gelu ? "gelu" : "relu");
        n = fused;
        m.remove(lin);
        lin = c;
        changed = true;
      }
    }
    ir::Node& L = g.nodes[size_t(lin)];
    const int out = L.outputs[0];
    if (L.inputs.size() > 3 || !m.internal(out)) continue;
    int add = m.sole_consumer(out, "Add");
    if (add < 0) continue;
    const int res = fuse::Matcher::other(g.nodes[size_t(add)], out);
    const ir::Value &rv = g.value(res), &ov = g.value(out);
    if (res == out || rv.dtype != DType::f32 || !rv.has_shape || !ov.has_shape || rv.shape != ov.shape) continue;
    ir::Node fused = L;
    while (fused.inputs.size() < 3) fused.inputs.push_back(-1);
    fused.inputs.push_back(res);
    fused.outputs = g.nodes[size_t(add)].outputs;
    fused.name = g.nodes[size_t(add)].name + "/linear";
    g.nodes[size_t(add)] = fused;
    m.remove(lin);
    changed = true;
  }
  m.commit();
  return changed;
}

std::vector<Pass> fusion_passes() {
  return {Pass{"fuse-gelu", fuse_gelu},
          Pass{"fuse-group-norm", fuse_group_norm},
          Pass{"fuse-rope", fuse_rope},
          Pass{"fuse-attention", fuse_attention},
          Pass{"fuse-layer-norm-2d", fuse_layer_norm_2d},
          Pass{"conv-channels-last", conv_channels_last},
          Pass{"fuse-linear", fuse_linear},
          Pass{"fuse-pointwise", fuse_pointwise}};
}

}  // namespace segmux::compiler
