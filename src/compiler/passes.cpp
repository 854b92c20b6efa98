// The generic passes: constant and shape folding, dead code, no-ops, common subexpressions, precision.
#include "compiler/passes.h"

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/op_schema.h"
#include "ir/static_shape.h"
#include "kernels/kernel.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace segmux::compiler {

namespace {

bool is_random_op(const ir::Node& n) {
  static const std::set<std::string> random = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                               "RandomUniformLike", "Multinomial",   "Bernoulli"};
  return n.domain.empty() && random.count(n.op_type) != 0;
}

bool is_graph_output(const ir::Graph& g, int v) {
  for (int o : g.outputs)
    if (o == v) return true;
  return false;
}

bool is_graph_input(const ir::Graph& g, int v) {
  for (int i : g.inputs)
    if (i == v) return true;
  return false;
}

void make_constant(ir::Graph& g, int v, Tensor t) {
  ir::Value& val = g.value(v);
  val.dtype = t.dtype();
  val.shape = t.shape();
  val.has_shape = true;
  val.producer = -1;
  g.initializers[v] = std::move(t);
}

// The tensor of an ONNX Constant node, or an undefined tensor when its form is not supported.
Tensor constant_node_value(const ir::Node& n) {
  if (const Tensor* t = n.has_attr("value") ? n.attr_tensor("value") : nullptr) return t->clone();
  if (n.has_attr("value_float")) return Tensor::scalar<float>(n.attr_float("value_float", 0));
  if (n.has_attr("value_int")) return Tensor::scalar<int64_t>(n.attr_int("value_int", 0));
  if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    return Tensor::from_vector<float>({int64_t(v.size())}, v);
  }
  if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    return Tensor::from_vector<int64_t>({int64_t(v.size())}, v);
  }
  return Tensor();
}

}  // namespace

void replace_uses(ir::Graph& g, int from, int to) {
  for (auto& n : g.nodes)
    for (int& v : n.inputs)
      if (v == from) v = to;
}

void remove_nodes(ir::Graph& g, const std::vector<char>& remove) {
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (i >= remove.size() || !remove[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  for (auto& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) g.value(o).producer = int(i);
}

bool fold_constants(ir::Graph& g, const FoldOptions& opt) {
  std::vector<char> remove(g.nodes.size(), 0);
  bool changed = false;
  const Provider& reference = reference_provider();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (is_random_op(node) || node.outputs.empty()) continue;
    if (node.domain.empty() && node.op_type == "Constant") {
      Tensor t = constant_node_value(node);
      if (!t.defined() || node.outputs.size() != 1 || node.outputs[0] < 0) continue;
      make_constant(g, node.outputs[0], std::move(t));
      remove[n] = 1;
      changed = true;
      continue;
    }
    bool all_constant = true;
    size_t in_bytes = 0;
    std::vector<ir::TensorType> types(node.inputs.size());
    std::vector<const ir::TensorType*> tin(node.inputs.size(), nullptr);
    std::vector<const Tensor*> vin(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int v = node.inputs[k];
      if (v < 0) continue;
      const Tensor* t = g.initializer(v);
      if (!t) {
        all_constant = false;
        break;
      }
      types[k] = ir::TensorType{t->dtype(), t->shape(), true};
      tin[k] = &types[k];
      vin[k] = t;
      in_bytes += t->nbytes();
    }
    if (!all_constant || node.inputs.empty()) continue;
    try {
      auto out_types = ir::infer_node(node, tin, vin);
      bool ok = true;
      size_t out_bytes = 0;
      for (auto& t : out_types) {
        bool known = t.has_shape;
        for (int64_t d : t.shape) known = known && d >= 0;
        if (!known)
          ok = false;
        else
          out_bytes += size_t(shape_numel(t.shape)) * dtype_size(t.dtype);
      }
      if (!ok || out_bytes > std::max(in_bytes, opt.max_growth_bytes)) continue;
      KernelInit init{node, tin, vin, out_types, 1};
      auto kernel = reference.make(init);
      if (!kernel) continue;
      std::vector<Tensor> outs(node.outputs.size());
      std::vector<Tensor*> out_ptrs;
      for (size_t k = 0; k < outs.size(); ++k) {
        outs[k] = Tensor(out_types[k].dtype, out_types[k].shape);
        out_ptrs.push_back(&outs[k]);
      }
      KernelContext ctx{node, vin, out_ptrs, 1};
      kernel->run(ctx);
      for (size_t k = 0; k < outs.size(); ++k)
        if (node.outputs[k] >= 0) make_constant(g, node.outputs[k], std::move(outs[k]));
      remove[n] = 1;
      changed = true;
    } catch (const Error&) {
      continue;  // not foldable here (e.g. a kernel that refuses these inputs); the node stays
    }
  }
  if (changed) remove_nodes(g, remove);
  return changed;
}

bool fold_shape_ops(ir::Graph& g) {
  std::vector<char> remove(g.nodes.size(), 0);
  bool changed = false;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (!node.domain.empty() || (node.op_type != "Shape" && node.op_type != "Size")) continue;
    if (node.inputs.size() != 1 || node.outputs.size() != 1 || node.inputs[0] < 0 || node.outputs[0] < 0) continue;
    const ir::Value& in = g.value(node.inputs[0]);
    if (!ir::has_static_shape(in)) continue;
    if (node.op_type == "Size") {
      make_constant(g, node.outputs[0], Tensor::scalar<int64_t>(shape_numel(in.shape)));
    } else {
      const int64_t rank = int64_t(in.shape.size());
      auto clamp = [&](int64_t i) { return std::min(std::max(i < 0 ? i + rank : i, int64_t(0)), rank); };
      int64_t start = clamp(node.attr_int("start", 0)), end = clamp(node.attr_int("end", rank));
      std::vector<int64_t> dims;
      for (int64_t i = start; i < end; ++i) dims.push_back(in.shape[size_t(i)]);
      make_constant(g, node.outputs[0], Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims));
    }
    remove[n] = 1;
    changed = true;
  }
  if (changed) remove_nodes(g, remove);
  return changed;
}

bool eliminate_dead_code(ir::Graph& g) {
  size_t nodes = g.nodes.size(), values = g.values.size(), inits = g.initializers.size();
  g.compact();
  return g.nodes.size() != nodes || g.values.size() != values || g.initializers.size() != inits;
}

namespace {

// True when the node passes its first input through unchanged (same dtype, shape and bytes).
bool is_noop(const ir::Graph& g, const ir::Node& node, const std::vector<std::vector<int>>& consumers) {
  if (!node.domain.empty() || node.inputs.empty() || node.inputs[0] < 0 || node.outputs.empty() || node.outputs[0] < 0)
    return false;
  const ir::Value& in = g.value(node.inputs[0]);
  const ir::Value& out = g.value(node.outputs[0]);
  // Every extra output must be absent or unused.
  for (size_t k = 1; k < node.outputs.size(); ++k) {
    int o = node.outputs[k];
    if (o >= 0 && (!consumers[size_t(o)].empty() || is_graph_output(g, o))) return false;
  }
  const std::string& op = node.op_type;
  if (op == "Identity") return true;
  if (op == "Dropout") {
    if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
      const Tensor* training = g.initializer(node.inputs[2]);
      if (!training || training->numel() != 1 || training->get_as_double(0) != 0) return false;
    }
    return true;
  }
  if (in.dtype != out.dtype || !ir::has_static_shape(in) || !ir::has_static_shape(out) || in.shape != out.shape)
    return false;
  if (op == "Cast" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand")
    return true;
  if (op == "Transpose") {
    auto perm = node.attr_ints("perm");
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i)) return false;
    return true;
  }
  return false;
}

}  // namespace

bool eliminate_noops(ir::Graph& g) {
  bool changed = false;
  std::vector<char> remove(g.nodes.size(), 0);
  auto consumers = g.consumers();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (!is_noop(g, node, consumers)) continue;
    int x = node.inputs[0], y = node.outputs[0];
    if (!is_graph_output(g, y)) {
      replace_uses(g, y, x);
      remove[n] = 1;
      changed = true;
      continue;
    }
    // y is a graph output. x may take its place (and name) only when x is an ordinary intermediate:
    // produced by a node, not itself an input/output/weight, so no other name is lost.
    if (x < 0 || g.value(x).producer < 0 || is_graph_input(g, x) || is_graph_output(g, x) || g.is_initializer(x))
      continue;
    std::string name = g.value(y).name;
    g.value(y).name = name + "/removed_noop";
    g.value(x).name = name;
    replace_uses(g, y, x);
    for (int& o : g.outputs)
      if (o == y) o = x;
    remove[n] = 1;
    changed = true;
    consumers = g.consumers();
  }
  if (changed) {
    remove_nodes(g, remove);
    g.compact();
  }
  return changed;
}

namespace {

void key_attr(std::string& key, const ir::AttrValue& a) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        auto raw = [&](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>) {
          raw(&v, sizeof(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          uint64_t n = v.size();
          raw(&n, 8);
          key += v;
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<float>>) {
          uint64_t n = v.size();
          raw(&n, 8);
          if (!v.empty()) raw(v.data(), v.size() * sizeof(v[0]));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          uint64_t n = v.size();
          raw(&n, 8);
          for (auto& s : v) {
            uint64_t m = s.size();
            raw(&m, 8);
            key += s;
          }
        } else {
          key += std::string(dtype_name(v.dtype())) + shape_str(v.shape());
          raw(v.raw(), v.nbytes());
        }
      },
      a);
}

}  // namespace

bool eliminate_common_subexpressions(ir::Graph& g) {
  bool changed = false;
  // Identical small initializers first (so nodes reading equal constants become equal).
  constexpr size_t kMaxDedupBytes = size_t(1) << 20;
  std::map<std::string, std::vector<int>> by_content;
  for (auto& [id, t] : g.initializers) {
    if (t.nbytes() > kMaxDedupBytes || is_graph_output(g, id)) continue;
    std::string k = std::string(dtype_name(t.dtype())) + shape_str(t.shape()) + ":" +
                    std::to_string(XXH3_64bits(t.raw(), t.nbytes()));
    by_content[k].push_back(id);
  }
  for (auto& [k, ids] : by_content) {
    for (size_t i = 1; i < ids.size(); ++i) {
      if (!g.initializers.at(ids[i]).identical(g.initializers.at(ids[0]))) continue;
      replace_uses(g, ids[i], ids[0]);
      changed = true;
    }
  }
  std::unordered_map<std::string, int> seen;  // key -> node index
  std::vector<char> remove(g.nodes.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (is_random_op(node)) continue;
    bool output_is_graph_output = false;
    for (int o : node.outputs) output_is_graph_output |= o >= 0 && is_graph_output(g, o);
    std::string key = node.domain + "\x01" + node.op_type + "\x01" + std::to_string(node.outputs.size()) + "\x01";
    for (int v : node.inputs) key += std::to_string(v) + ",";
    for (auto& [name, a] : node.attrs) {
      key += "\x02" + name + "\x03";
      key_attr(key, a);
    }
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(std::move(key), int(n));
      continue;
    }
    if (output_is_graph_output) continue;  // its name must survive
    const ir::Node& first = g.nodes[size_t(it->second)];
    bool compatible = true;
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k] >= 0 && first.outputs[k] < 0) compatible = false;
    if (!compatible) continue;
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k] >= 0) replace_uses(g, node.outputs[k], first.outputs[k]);
    remove[n] = 1;
    changed = true;
  }
  if (changed) {
    remove_nodes(g, remove);
    g.compact();
  }
  return changed;
}

namespace {

// segmux::Attention has no weights: the bf16 tile rounds its q, k, v where the CPU has AVX512_BF16
// (elsewhere the kernel stays f32, attention.cpp), with or without a mask / bias input. The official
// predictor runs every attention under bf16 autocast (its SDPA gets bf16 q, k, v, masked or not). Our
// bf16 with the masked ones in bf16 too (the tracker's memory attention, the text encoder's causal
// attention, the detector's box-biased cross-attention) is as close to that run as with them in f32,
// and on the fixture video's detection frame it has that run's ids (docs/bf16.md); the memory
// attention is also most of the propagation decoder's FLOPs (1.43x less CPU time in bf16).
bool is_f32_attention(const ir::Graph& g, const ir::Node& node) {
  if (node.domain != "segmux" || node.op_type != "Attention" || node.inputs.size() < 3) return false;
  for (size_t k = 0; k < 3; ++k)
    if (node.inputs[k] < 0 || g.value(node.inputs[k]).dtype != DType::f32) return false;
  return true;
}

}  // namespace

bool mark_bf16_precision(ir::Graph& g) {
  static const std::set<std::string> onnx_ops = {"MatMul", "Gemm", "Conv", "ConvTranspose"};
  // Weighted segmux ops (Attention has no weights: is_f32_attention above).
  static const std::set<std::string> segmux_ops = {"Linear", "Conv"};
  bool changed = false;
  for (auto& node : g.nodes) {
    const bool candidate = (node.domain.empty() && onnx_ops.count(node.op_type)) ||
                           (node.domain == "segmux" && segmux_ops.count(node.op_type));
    bool has_f32_weight = false;
    for (size_t k = 1; candidate && k < node.inputs.size(); ++k) {
      const Tensor* w = node.inputs[k] >= 0 ? g.initializer(node.inputs[k]) : nullptr;
      has_f32_weight |= w != nullptr && w->dtype() == DType::f32 && w->rank() >= 2;
    }
    if (!has_f32_weight && !is_f32_attention(g, node)) continue;
    if (ir::wants_bf16(node)) continue;
    node.attrs[kPrecisionAttr] = std::string(ir::kPrecisionBf16);
    changed = true;
  }
  return changed;
}

}  // namespace segmux::compiler
