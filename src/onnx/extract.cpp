#include "onnx/extract.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/error.h"

namespace segmux::onnx_io {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The value id of `name`, or an error naming the option and the nearest (or available) names.
int value_or_fail(const ir::Graph& g, const std::string& name, const char* what) {
  int id = g.find_value(name);
  if (id >= 0) return id;
  std::vector<std::string> near = nearest_value_names(g, name);
  std::string list;
  for (const std::string& n : near) list += (list.empty() ? "'" : ", '") + n + "'";
  if (!near.empty()) fail(what, " '", name, "' is not a tensor of the model; nearest names: ", list);
  std::string avail;
  size_t shown = 0;
  for (const ir::Value& v : g.values) {
    if (shown == 20) break;
    avail += (avail.empty() ? "'" : ", '") + v.name + "'";
    ++shown;
  }
  fail(what, " '", name, "' is not a tensor of the model; its tensors include ", avail,
       g.values.size() > shown ? " (" + std::to_string(g.values.size() - shown) + " more)" : std::string());
}

}  // namespace

std::vector<std::string> nearest_value_names(const ir::Graph& g, const std::string& name, size_t max) {
  const std::string key = lower(name);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const ir::Value& v : g.values) {
    if (v.name.empty()) continue;
    const std::string n = lower(v.name);
    size_t d = edit_distance(key, n);
    const bool substring = key.size() >= 3 && (n.find(key) != std::string::npos || key.find(n) != std::string::npos);
    if (substring) d = 0;
    if (d <= std::max<size_t>(2, key.size() / 3)) scored.emplace_back(d, v.name);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (auto& [d, n] : scored) {
    if (out.size() == max) break;
    out.push_back(n);
  }
  return out;
}

ir::Graph extract_subgraph(const ir::Graph& g, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs) {
  SEGMUX_CHECK(!outputs.empty(), "extract: no outputs given");
  std::vector<int> in_ids, out_ids;
  std::set<int> stop;
  for (const std::string& n : inputs) {
    int id = value_or_fail(g, n, "input");
    SEGMUX_CHECK(stop.insert(id).second, "input '", n, "' is given twice");
    in_ids.push_back(id);
  }
  std::set<int> seen_out;
  for (const std::string& n : outputs) {
    int id = value_or_fail(g, n, "output");
    SEGMUX_CHECK(seen_out.insert(id).second, "output '", n, "' is given twice");
    SEGMUX_CHECK(!g.is_initializer(id), "output '", n, "' is an initializer (a constant), not a computed tensor");
    out_ids.push_back(id);
  }

  // Walk back from the outputs: which nodes and initializers the subgraph needs.
  std::vector<char> node_needed(g.nodes.size(), 0);
  std::set<int> inits;
  std::vector<std::pair<int, int>> todo;  // (value, output that needs it)
  std::set<int> visited;
  for (int id : out_ids) todo.emplace_back(id, id);
  while (!todo.empty()) {
    auto [v, why] = todo.back();
    todo.pop_back();
    if (!visited.insert(v).second || stop.count(v)) continue;
    if (g.is_initializer(v)) {
      inits.insert(v);
      continue;
    }
    const int p = g.value(v).producer;
    SEGMUX_CHECK(p >= 0, "output '", g.value(why).name, "' needs '", g.value(v).name,
                 "', which is a model input that is not among the given inputs (add it to --inputs)");
    if (node_needed[size_t(p)]) continue;
    node_needed[size_t(p)] = 1;
    for (int in : g.nodes[size_t(p)].inputs)
      if (in >= 0) todo.emplace_back(in, why);
  }

  // The new graph: values renumbered in first-use order, nodes in the model's (topological) order.
  ir::Graph sub;
  sub.name = g.name + "_extract";
  sub.metadata = g.metadata;
  std::map<int, int> remap;
  auto map_value = [&](int v) {
    if (v < 0) return -1;
    auto it = remap.find(v);
    if (it != remap.end()) return it->second;
    const ir::Value& old = g.value(v);
    int id = sub.add_value(old.name, old.dtype, old.has_shape ? std::optional<Shape>(old.shape) : std::nullopt);
    remap[v] = id;
    return id;
  };
  for (int v : in_ids) sub.inputs.push_back(map_value(v));
  for (int v : inits) sub.initializers[map_value(v)] = *g.initializer(v);  // shared data, a copy per model file
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!node_needed[i]) continue;
    ir::Node n = g.nodes[i];
    for (int& v : n.inputs) v = map_value(v);
    for (int& v : n.outputs) {
      SEGMUX_CHECK(v < 0 || !stop.count(v), "input '", v < 0 ? "" : g.value(v).name, "' is an output of ",
                   g.nodes[i].describe(), ", which the outputs also need for another of its outputs; cut elsewhere");
      v = map_value(v);
      if (v >= 0) sub.value(v).producer = int(sub.nodes.size());
    }
    sub.nodes.push_back(std::move(n));
  }
  for (int v : out_ids) sub.outputs.push_back(map_value(v));
  ir::verify_structure(sub);
  return sub;
}

}  // namespace segmux::onnx_io
