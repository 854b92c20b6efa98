// Slimming a standard ONNX graph: the compiler's passes that keep it standard ONNX (opset 17, default
// domain): shape arithmetic folded, constants folded, no-ops (Identity, same-type Cast, ...) removed,
// duplicate nodes and initializers merged, dead nodes removed. No segmux-domain fusion, no precision
// marks: the result exports as standard ONNX that any runtime loads. Used by `segmux slim` and by
// deployment packages.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "compiler/pass_manager.h"
#include "ir/graph.h"

namespace segmux::compiler {

struct SlimReport {
  PassReport passes;
  size_t initializers_before = 0, initializers_after = 0;
  size_t initializer_bytes_before = 0, initializer_bytes_after = 0;
  std::map<std::string, size_t> ops_before, ops_after;  // node count per op type
  std::string to_text() const;                          // a few lines for logs and reports
  std::string to_json() const;
};

// The pass list (to a fixed point with run_passes).
std::vector<Pass> slim_passes(const FoldOptions& fold = {});

// Slims `g` in place. The outputs keep their names, dtypes and shapes and compute the same values.
// Fails (naming the node) if a pass ever produced a non-standard node.
SlimReport slim_graph(ir::Graph& g, const FoldOptions& fold = {});

}  // namespace segmux::compiler
