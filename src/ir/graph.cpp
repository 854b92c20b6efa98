#include "ir/graph.h"

#include <set>
#include <sstream>

namespace segmux::ir {

namespace {
template <typename T>
const T* get_attr(const Node& n, const std::string& k) {
  auto it = n.attrs.find(k);
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  SEGMUX_CHECK(v != nullptr, n.describe(), ": attribute '", k, "' has the wrong type");
  return v;
}
}  // namespace

int64_t Node::attr_int(const std::string& k, int64_t def) const {
  auto* v = get_attr<int64_t>(*this, k);
  return v ? *v : def;
}
float Node::attr_float(const std::string& k, float def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto* i = std::get_if<int64_t>(&it->second)) return float(*i);
  auto* v = get_attr<float>(*this, k);
  return *v;
}
std::string Node::attr_string(const std::string& k, const std::string& def) const {
  auto* v = get_attr<std::string>(*this, k);
  return v ? *v : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& k, const std::vector<int64_t>& def) const {
  auto* v = get_attr<std::vector<int64_t>>(*this, k);
  return v ? *v : def;
}
std::vector<float> Node::attr_floats(const std::string& k, const std::vector<float>& def) const {
  auto* v = get_attr<std::vector<float>>(*this, k);
  return v ? *v : def;
}
const Tensor* Node::attr_tensor(const std::string& k) const { return get_attr<Tensor>(*this, k); }

std::string Node::describe() const {
  std::ostringstream os;
  os << "node '" << name << "' (" << (domain.empty() ? "" : domain + ".") << op_type << ")";
  return os.str();
}

int Graph::add_value(const std::string& name, DType dtype, std::optional<Shape> shape) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  if (shape) {
    v.shape = *shape;
    v.has_shape = true;
  }
  values.push_back(std::move(v));
  return int(values.size()) - 1;
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return int(i);
  return -1;
}

const Tensor* Graph::initializer(int id) const {
  auto it = initializers.find(id);
  return it == initializers.end() ? nullptr : &it->second;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> out(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].inputs)
      if (v >= 0) out[size_t(v)].push_back(int(n));
  return out;
}

void Graph::compact() {
  std::vector<char> live_value(values.size(), 0), live_node(nodes.size(), 0);
  for (int v : outputs) live_value[size_t(v)] = 1;
  for (size_t i = nodes.size(); i-- > 0;) {
    bool needed = false;
    for (int o : nodes[i].outputs)
      if (o >= 0 && live_value[size_t(o)]) needed = true;
    if (!needed) continue;
    live_node[i] = 1;
    for (int v : nodes[i].inputs)
      if (v >= 0) live_value[size_t(v)] = 1;
    for (int o : nodes[i].outputs)
      if (o >= 0) live_value[size_t(o)] = 1;
  }
  for (int v : inputs) live_value[size_t(v)] = 1;  // the signature is kept even if unused
  std::vector<int> remap(values.size(), -1);
  std::vector<Value> new_values;
  for (size_t i = 0; i < values.size(); ++i)
    if (live_value[i]) {
      remap[i] = int(new_values.size());
      new_values.push_back(values[i]);
    }
  std::vector<Node> new_nodes;
  std::vector<int> node_remap(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live_node[i]) continue;
    Node n = nodes[i];
    for (int& v : n.inputs) v = v >= 0 ? remap[size_t(v)] : -1;
    for (int& v : n.outputs) v = v >= 0 ? remap[size_t(v)] : -1;
    node_remap[i] = int(new_nodes.size());
    new_nodes.push_back(std::move(n));
  }
  for (auto& v : new_values) v.producer = v.producer >= 0 ? node_remap[size_t(v.producer)] : -1;
  std::map<int, Tensor> new_inits;
  for (auto& [id, t] : initializers)
    if (remap[size_t(id)] >= 0) new_inits.emplace(remap[size_t(id)], t);
  for (int& v : inputs) v = remap[size_t(v)];
  for (int& v : outputs) v = remap[size_t(v)];
  values = std::move(new_values);
  nodes = std::move(new_nodes);
  initializers = std::move(new_inits);
}

void Graph::uniquify_names() {
  std::set<std::string> seen;
  for (auto& v : values) {
    if (v.name.empty()) v.name = "v";
    std::string base = v.name, name = base;
    for (int k = 1; seen.count(name); ++k) name = base + "_" + std::to_string(k);
    v.name = name;
    seen.insert(name);
  }
}

void verify_structure(const Graph& g) {
  const int nv = int(g.values.size());
  std::vector<char> defined(size_t(nv), 0);
  std::set<std::string> names;
  for (int i = 0; i < nv; ++i) {
    SEGMUX_CHECK(names.insert(g.values[size_t(i)].name).second, "graph '", g.name, "': value name '",
                 g.values[size_t(i)].name, "' is used twice");
  }
  for (int v : g.inputs) {
    SEGMUX_CHECK(v >= 0 && v < nv, "graph '", g.name, "': input id ", v, " does not exist");
    SEGMUX_CHECK(!g.is_initializer(v), "graph input '", g.value(v).name, "' is also an initializer");
    defined[size_t(v)] = 1;
  }
  for (auto& [id, t] : g.initializers) {
    SEGMUX_CHECK(id >= 0 && id < nv, "graph '", g.name, "': initializer id ", id, " does not exist");
    const Value& v = g.value(id);
    SEGMUX_CHECK(v.dtype == t.dtype(), "initializer '", v.name, "' is declared ", dtype_name(v.dtype), " but holds ",
                 dtype_name(t.dtype()));
    SEGMUX_CHECK(!v.has_shape || v.shape == t.shape(), "initializer '", v.name, "' is declared ", shape_str(v.shape),
                 " but holds ", shape_str(t.shape()));
    defined[size_t(id)] = 1;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    SEGMUX_CHECK(!node.op_type.empty(), "graph '", g.name, "': node #", n, " has no op type");
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int v = node.inputs[k];
      if (v < 0) continue;
      SEGMUX_CHECK(v < nv, node.describe(), ": input ", k, " refers to missing value id ", v);
      SEGMUX_CHECK(defined[size_t(v)], node.describe(), ": input ", k, " '", g.value(v).name,
                   "' is used before it is produced (or is never produced)");
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int v = node.outputs[k];
      if (v < 0) continue;
      SEGMUX_CHECK(v < nv, node.describe(), ": output ", k, " refers to missing value id ", v);
      SEGMUX_CHECK(!defined[size_t(v)], node.describe(), ": output '", g.value(v).name,
                   "' is already produced elsewhere");
      defined[size_t(v)] = 1;
    }
  }
  for (int v : g.outputs) {
    SEGMUX_CHECK(v >= 0 && v < nv, "graph '", g.name, "': output id ", v, " does not exist");
    SEGMUX_CHECK(defined[size_t(v)], "graph output '", g.value(v).name, "' dangles: nothing produces it");
  }
}

}  // namespace segmux::ir
