// The pass manager: runs a pass list to a fixed point (bounded rounds), each pass skippable by name,
// with per-pass statistics.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/pass.h"
#include "compiler/passes.h"

namespace segmux::compiler {

struct PassStats {
  std::string name;
  int runs = 0;            // times the pass ran
  int changes = 0;         // times it changed the graph
  long nodes_removed = 0;  // net node count decrease it caused (negative: it added nodes)
  long weights_added = 0;  // net initializer count increase
  double seconds = 0;
};

struct PassManagerOptions {
  int max_rounds = 10;
  std::set<std::string> skip;  // pass names not to run
  bool verify_each = false;    // structural verification after every pass (tests, debugging)
  bool reinfer_shapes = true;  // shape inference after every pass that changed the graph
};

struct PassReport {
  int rounds = 0;
  size_t nodes_before = 0, nodes_after = 0;
  std::vector<PassStats> passes;  // in list order
  std::string to_json() const;
  std::string to_text() const;
};

// The standard list: shape folding, constant folding, no-op elimination, CSE, fusion (when the
// kernels helper's fusion_passes() exists), DCE. `precision` "bf16" appends the precision pass.
// strided_views: the attention-views pass (its attributes have CPU kernels only, not CUDA ones).
std::vector<Pass> default_passes(const std::string& precision = "fp32", const FoldOptions& fold = {},
                                 bool strided_views = true);
std::vector<std::string> known_pass_names(const std::string& precision = "fp32");

// Runs the passes to a fixed point; unknown names in `skip` are an error.
PassReport run_passes(ir::Graph& g, const std::vector<Pass>& passes, const PassManagerOptions& opt = {});

}  // namespace segmux::compiler
