#include "compiler/graph_stats.h"

#include <set>

#include "ir/op_schema.h"
#include "ir/strided_view.h"
#include "kernels/kernel.h"

namespace segmux::compiler {

namespace {

const ir::Value* known(const ir::Graph& g, int v) {
  if (v < 0) return nullptr;
  const ir::Value& val = g.value(v);
  if (!val.has_shape) return nullptr;
  for (int64_t d : val.shape)
    if (d < 0) return nullptr;
  return &val;
}

double numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= double(d);
  return n;
}

}  // namespace

double node_flops(const ir::Graph& g, const ir::Node& n) {
  const std::string& op = n.op_type;
  bool heavy_onnx = n.domain.empty() && (op == "MatMul" || op == "Gemm" || op == "Conv" || op == "ConvTranspose");
  bool heavy_segmux = n.domain == "segmux" && (op == "Linear" || op == "Attention" || op == "Conv");
  if (!heavy_onnx && !heavy_segmux) return 0;
  if (n.inputs.size() < 2 || n.outputs.empty()) return 0;
  const ir::Value* a = known(g, n.inputs[0]);
  const ir::Value* b = known(g, n.inputs[1]);
  const ir::Value* y = known(g, n.outputs[0]);
  if (!a || !b || !y || a->shape.empty()) return 0;
  if (op == "MatMul" || op == "Linear") return 2.0 * numel(y->shape) * double(a->shape.back());
  if (op == "Gemm") {
    int64_t k = n.attr_int("transA", 0) ? a->shape.front() : a->shape.back();
    return 2.0 * numel(y->shape) * double(k);
  }
  if (op == "Conv") {  // weight [M, C/group, k...]: each output element takes C/group * prod(k) MACs
    double per = 1;
    for (size_t i = 1; i < b->shape.size(); ++i) per *= double(b->shape[i]);
    return 2.0 * numel(y->shape) * per;
  }
  if (op == "ConvTranspose") {  // weight [C, M/group, k...]: each input element scatters M/group * prod(k)
    double per = 1;
    for (size_t i = 1; i < b->shape.size(); ++i) per *= double(b->shape[i]);
    return 2.0 * numel(a->shape) * per;
  }
  if (op == "Attention" && n.inputs.size() >= 3) {  // q [..., L, D], k [..., S, D]: QK^T and PV
    const ir::Value* v = known(g, n.inputs[2]);
    if (!v) return 0;
    // The shapes the node reads: its strided views' (ir/strided_view.h) where it has them.
    const Shape qs = ir::read_shape(n, 0, a->shape), ks = ir::read_shape(n, 1, b->shape),
                vs = ir::read_shape(n, 2, v->shape);
    if (qs.size() < 2 || ks.size() < 2 || vs.empty()) return 0;
    double l = double(qs[qs.size() - 2]), d = double(qs.back());
    double s = double(ks[ks.size() - 2]), dv = double(vs.back());
    double batch = numel(qs) / (l * d);
    return 2.0 * batch * l * s * (d + dv);
  }
  return 0;
}

GraphStats graph_stats(const ir::Graph& g) {
  GraphStats s;
  for (auto& [id, t] : g.initializers) {
    s.parameters += t.numel();
    s.weight_bytes += t.nbytes();
  }
  std::set<std::string> reported;
  for (const ir::Node& n : g.nodes) {
    std::string key = (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
    s.op_histogram[key]++;
    double f = node_flops(g, n);
    s.flops += f;
    bool heavy = (n.domain.empty() && (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "Conv")) ||
                 (n.domain == "segmux" && n.op_type == "Linear");
    if (heavy && f == 0) s.nodes_without_flops_estimate++;
    if (reported.count(key)) continue;
    if (!ir::find_schema(n.domain, n.op_type)) {
      s.unsupported.push_back(key + ": no op schema (shape inference)");
      reported.insert(key);
      continue;
    }
    // A kernel factory may need types; build them as the session would.
    std::vector<ir::TensorType> types(n.inputs.size());
    KernelInit init{n, {}, {}, {}, 1};
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] < 0) {
        init.inputs.push_back(nullptr);
        init.constants.push_back(nullptr);
        continue;
      }
      const ir::Value& v = g.value(n.inputs[k]);
      types[k] = ir::TensorType{v.dtype, v.shape, v.has_shape};
      init.inputs.push_back(&types[k]);
      init.constants.push_back(g.initializer(n.inputs[k]));
    }
    for (int o : n.outputs) {
      if (o < 0)
        init.outputs.push_back({});
      else
        init.outputs.push_back(ir::TensorType{g.value(o).dtype, g.value(o).shape, g.value(o).has_shape});
    }
    bool has_kernel = false;
    try {
      has_kernel = reference_provider().make(init) != nullptr;
    } catch (const Error&) {
      has_kernel = true;  // the op is known; the factory only disliked these (maybe unknown) types
    }
    if (!has_kernel) {
      s.unsupported.push_back(key + ": no reference kernel");
    }
    reported.insert(key);  // each op type is checked once
  }
  return s;
}

}  // namespace segmux::compiler
