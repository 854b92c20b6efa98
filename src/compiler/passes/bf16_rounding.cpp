// The graph's own bf16 roundings (Cast to bf16 then back to f32, as the official bf16 MLP of the ViT
// is exported: src/models/sam31/backbone.cpp vit_mlp). bf16 builds drop them where the bf16 kernels
// make them redundant, so that fc1 + GELU fuse; every build folds those around a GELU into the GELU
// (attributes bf16_round_input / bf16_round_output), so they cost no pass over [tokens, hidden]. bf16
// builds then keep fc1's output bf16 for fc2 (keep_bf16_between_linears): fc2 rounded it anyway.
#include "compiler/passes.h"
#include "compiler/passes/fuse_util.h"
#include "ir/precision.h"

namespace segmux::compiler {
namespace {

bool is_cast_to(const ir::Graph& g, const ir::Node& n, DType to) {
  return n.domain.empty() && n.op_type == "Cast" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
         n.outputs[0] >= 0 && g.value(n.outputs[0]).dtype == to;
}

// x when v = Cast(Cast(x, bf16), f32) with x f32, else -1.
int rounded_source(const fuse::Matcher& m, int v) {
  const int p2 = m.producer(v);
  if (p2 < 0 || !is_cast_to(m.g, m.g.nodes[size_t(p2)], DType::f32)) return -1;
  const int p1 = m.producer(m.g.nodes[size_t(p2)].inputs[0]);
  if (p1 < 0 || !is_cast_to(m.g, m.g.nodes[size_t(p1)], DType::bf16)) return -1;
  const int x = m.g.nodes[size_t(p1)].inputs[0];
  return x >= 0 && m.g.value(x).dtype == DType::f32 ? x : -1;
}

// A node whose bf16 kernel rounds input 0 to bf16 (round to nearest even, as Cast does) before using it:
// MatMul / Gemm / Linear with a constant 2-D weight, marked bf16 (onednn_matmul.cpp).
bool rounds_first_input(const ir::Graph& g, const ir::Node& n) {
  const bool op = (n.domain.empty() && (n.op_type == "MatMul" || n.op_type == "Gemm")) ||
                  (n.domain == "segmux" && n.op_type == "Linear");
  if (!op || !ir::wants_bf16(n) || n.inputs.size() < 2 || n.attr_int("transA", 0) != 0) return false;
  const Tensor* w = n.inputs[1] >= 0 ? g.initializer(n.inputs[1]) : nullptr;
  return w && w->rank() == 2;
}

// A bf16 segmux Linear with a constant 2-D f32 weight whose activations may be stored as bf16.
bool is_bf16_weight_linear(const ir::Graph& g, const ir::Node& n) {
  if (n.domain != "segmux" || n.op_type != "Linear" || !ir::wants_bf16(n) || n.inputs.size() < 2) return false;
  const Tensor* w = n.inputs[1] >= 0 ? g.initializer(n.inputs[1]) : nullptr;
  return w && w->rank() == 2 && w->dtype() == DType::f32;
}

// v is read only as input 0 of bf16 Linears, each of which rounds it to bf16 first.
bool read_only_as_bf16_linear_input(const fuse::Matcher& m, int v) {
  if (m.is_output[size_t(v)] || m.consumers[size_t(v)].empty()) return false;
  for (int c : m.consumers[size_t(v)]) {
    const ir::Node& n = m.g.nodes[size_t(c)];
    if (!is_bf16_weight_linear(m.g, n) || n.inputs[0] != v) return false;
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (n.inputs[k] == v) return false;
  }
  return true;
}

}  // namespace

bool keep_bf16_between_linears(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (ir::Node& n : g.nodes) {
    if (!is_bf16_weight_linear(g, n) || n.attr_int(ir::kLinearBf16Output, 0) != 0 || n.outputs.empty()) continue;
    const int y = n.outputs[0];
    if (y < 0 || g.value(y).dtype != DType::f32 || !read_only_as_bf16_linear_input(m, y)) continue;
    n.attrs[ir::kLinearBf16Output] = int64_t(1);
    changed = true;
  }
  return changed;
}

bool drop_bf16_roundings(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    // Exact: the kernel rounds this input itself, and rounding twice is rounding once.
    if (rounds_first_input(g, n)) {
      const int x = rounded_source(m, n.inputs[0]);
      if (x >= 0) {
        n.inputs[0] = x;
        changed = true;
      }
      continue;
    }
    // Within the bf16 build's precision: GELU on the bf16 Linear's f32 result instead of on that result
    // rounded to bf16 (a difference of at most one bf16 rounding of the GELU input); the fusion passes
    // then run the GELU as the Linear's post-op.
    if (n.domain != "segmux" || n.op_type != "Gelu" || n.inputs.empty()) continue;
    const int r = n.inputs[0], x = rounded_source(m, r);
    const int lin = x >= 0 && m.internal(x) ? m.producer(x) : -1;
    if (lin < 0) continue;
    const ir::Node& L = g.nodes[size_t(lin)];
    if (L.domain != "segmux" || L.op_type != "Linear" || !ir::wants_bf16(L) || L.has_attr("activation")) continue;
    n.inputs[0] = x;
    changed = true;
  }
  if (changed) {
    // The Casts nobody reads any more.
    eliminate_dead_code(g);
  }
  return changed;
}

// Exact in every precision: GELU(round(x)) rounded, computed in one pass instead of five (four Casts
// over [tokens, hidden] and the GELU). The Gelu node takes over the second Cast's output value.
bool fold_gelu_bf16_roundings(ir::Graph& g) {
  fuse::Matcher m(g);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    if (m.removed[i] || n.domain != "segmux" || n.op_type != "Gelu" || n.inputs.size() != 1) continue;
    if (n.attr_int(ir::kGeluRoundInput, 0) == 0) {
      const int x = rounded_source(m, n.inputs[0]);
      if (x >= 0) {
        n.inputs[0] = x;
        n.attrs[ir::kGeluRoundInput] = int64_t(1);
        changed = true;
      }
    }
    if (n.attr_int(ir::kGeluRoundOutput, 0) != 0) continue;
    const int y = n.outputs[0];
    const int to_bf16 = y >= 0 && m.internal(y) ? m.consumers[size_t(y)][0] : -1;
    if (to_bf16 < 0 || m.removed[size_t(to_bf16)] || !is_cast_to(g, g.nodes[size_t(to_bf16)], DType::bf16)) continue;
    const int b = g.nodes[size_t(to_bf16)].outputs[0];
    const int to_f32 = m.internal(b) ? m.consumers[size_t(b)][0] : -1;
    if (to_f32 < 0 || m.removed[size_t(to_f32)] || !is_cast_to(g, g.nodes[size_t(to_f32)], DType::f32)) continue;
    n.outputs = g.nodes[size_t(to_f32)].outputs;
    n.attrs[ir::kGeluRoundOutput] = int64_t(1);
    m.remove(to_bf16);
    m.remove(to_f32);
    changed = true;
  }
  m.commit();
  if (changed) eliminate_dead_code(g);  // input Casts nobody reads any more
  return changed;
}

}  // namespace segmux::compiler
