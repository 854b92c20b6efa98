#include "compiler/slim.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace segmux::compiler {

namespace {

void count(const ir::Graph& g, std::map<std::string, size_t>& ops, size_t& inits, size_t& bytes) {
  ops.clear();
  for (const ir::Node& n : g.nodes) ++ops[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
  inits = g.initializers.size();
  bytes = 0;
  for (const auto& [id, t] : g.initializers) bytes += t.nbytes();
}

}  // namespace

std::vector<Pass> slim_passes(const FoldOptions& fold) {
  return {Pass{"fold-shapes", fold_shape_ops},
          Pass{"fold-constants", [fold](ir::Graph& g) { return fold_constants(g, fold); }},
          Pass{"eliminate-noops", eliminate_noops}, Pass{"cse", eliminate_common_subexpressions},
          Pass{"dce", eliminate_dead_code}};
}

SlimReport slim_graph(ir::Graph& g, const FoldOptions& fold) {
  SlimReport r;
  count(g, r.ops_before, r.initializers_before, r.initializer_bytes_before);
  r.passes = run_passes(g, slim_passes(fold));
  count(g, r.ops_after, r.initializers_after, r.initializer_bytes_after);
  for (const ir::Node& n : g.nodes)
    SEGMUX_CHECK(n.domain.empty() || r.ops_before.count(n.domain + "." + n.op_type), "slim: ", n.describe(),
                 " is not standard ONNX (domain '", n.domain, "') and was not in the input graph");
  return r;
}

std::string SlimReport::to_text() const {
  std::ostringstream o;
  o << "nodes " << passes.nodes_before << " -> " << passes.nodes_after << ", initializers " << initializers_before
    << " -> " << initializers_after << " (" << initializer_bytes_before << " -> " << initializer_bytes_after
    << " bytes), " << passes.rounds << " rounds\n";
  for (const PassStats& p : passes.passes)
    o << "  " << p.name << ": changed the graph " << p.changes << "x, nodes removed " << p.nodes_removed << "\n";
  std::map<std::string, std::pair<size_t, size_t>> ops;
  for (auto& [op, n] : ops_before) ops[op].first = n;
  for (auto& [op, n] : ops_after) ops[op].second = n;
  for (auto& [op, c] : ops)
    if (c.first != c.second) o << "  " << op << ": " << c.first << " -> " << c.second << "\n";
  return o.str();
}

std::string SlimReport::to_json() const {
  nlohmann::json j = nlohmann::json::parse(passes.to_json());
  j["initializers_before"] = initializers_before;
  j["initializers_after"] = initializers_after;
  j["initializer_bytes_before"] = initializer_bytes_before;
  j["initializer_bytes_after"] = initializer_bytes_after;
  j["ops_before"] = ops_before;
  j["ops_after"] = ops_after;
  return j.dump(2);
}

}  // namespace segmux::compiler
