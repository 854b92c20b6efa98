#include "compiler/pass_manager.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/op_schema.h"

#if __has_include("compiler/passes/fuse_all.h")
#include "compiler/passes/fuse_all.h"
#define SEGMUX_HAVE_FUSION 1
#endif

namespace segmux::compiler {

std::vector<Pass> default_passes(const std::string& precision, const FoldOptions& fold, bool strided_views) {
  SEGMUX_CHECK(precision == "fp32" || precision == "bf16", "unknown precision '", precision, "' (known: fp32, bf16)");
  std::vector<Pass> passes;
  passes.push_back(Pass{"fold-shapes", fold_shape_ops});
  passes.push_back(Pass{"fold-constants", [fold](ir::Graph& g) { return fold_constants(g, fold); }});
  passes.push_back(Pass{"eliminate-noops", eliminate_noops});
  passes.push_back(Pass{"cse", eliminate_common_subexpressions});
#ifdef SEGMUX_HAVE_FUSION
  for (auto& p : fusion_passes()) passes.push_back(p);
#endif
  passes.push_back(Pass{"dce", eliminate_dead_code});
  if (strided_views) passes.push_back(Pass{"attention-views", read_through_views});
  if (precision == "bf16") {
    passes.push_back(Pass{"precision-bf16", mark_bf16_precision});
    passes.push_back(Pass{"bf16-roundings", drop_bf16_roundings});
    passes.push_back(Pass{"bf16-between-linears", keep_bf16_between_linears});
  }
  passes.push_back(Pass{"gelu-bf16-roundings", fold_gelu_bf16_roundings});
  return passes;
}

std::vector<std::string> known_pass_names(const std::string& precision) {
  std::vector<std::string> names;
  for (auto& p : default_passes(precision)) names.push_back(p.name);
  return names;
}

PassReport run_passes(ir::Graph& g, const std::vector<Pass>& passes, const PassManagerOptions& opt) {
  for (auto& s : opt.skip) {
    bool known = false;
    for (auto& p : passes) known |= p.name == s;
    if (!known) {
      std::string list;
      for (auto& p : passes) list += (list.empty() ? "" : ", ") + p.name;
      fail("cannot skip unknown pass '", s, "' (passes: ", list, ")");
    }
  }
  PassReport report;
  report.nodes_before = g.nodes.size();
  for (auto& p : passes) report.passes.push_back(PassStats{p.name});
  for (int round = 0; round < opt.max_rounds; ++round) {
    bool any = false;
    for (size_t i = 0; i < passes.size(); ++i) {
      if (opt.skip.count(passes[i].name)) continue;
      PassStats& st = report.passes[i];
      long nodes = long(g.nodes.size()), inits = long(g.initializers.size());
      auto t0 = std::chrono::steady_clock::now();
      bool changed = passes[i].run(g);
      st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      st.runs++;
      if (changed) {
        st.changes++;
        any = true;
        // Folding can make shapes static downstream (a Reshape whose target became constant): re-infer
        // so the next passes see them.
        if (opt.reinfer_shapes) {
          try {
            ir::infer_shapes(g);
          } catch (const Error& e) {
            fail("after pass '", passes[i].name, "': shape inference failed: ", e.what());
          }
        }
        if (opt.verify_each) {
          try {
            ir::verify_structure(g);
          } catch (const Error& e) {
            fail("pass '", passes[i].name, "' broke the graph: ", e.what());
          }
        }
      }
      st.nodes_removed += nodes - long(g.nodes.size());
      st.weights_added += long(g.initializers.size()) - inits;
    }
    report.rounds = round + 1;
    if (!any) break;
  }
  report.nodes_after = g.nodes.size();
  return report;
}

std::string PassReport::to_json() const {
  nlohmann::json j;
  j["rounds"] = rounds;
  j["nodes_before"] = nodes_before;
  j["nodes_after"] = nodes_after;
  j["passes"] = nlohmann::json::array();
  for (auto& p : passes)
    j["passes"].push_back({{"name", p.name},
                           {"runs", p.runs},
                           {"changes", p.changes},
                           {"nodes_removed", p.nodes_removed},
                           {"weights_added", p.weights_added},
                           {"seconds", p.seconds}});
  return j.dump();
}

std::string PassReport::to_text() const {
  std::ostringstream os;
  os << "passes: " << rounds << " round(s), nodes " << nodes_before << " -> " << nodes_after << "\n";
  char line[160];
  for (auto& p : passes) {
    std::snprintf(line, sizeof(line), "  %-18s runs %2d  changed %2d  nodes -%-6ld weights %+ld  %.3f s\n",
                  p.name.c_str(), p.runs, p.changes, p.nodes_removed, p.weights_added, p.seconds);
    os << line;
  }
  return os.str();
}

}  // namespace segmux::compiler
