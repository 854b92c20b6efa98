// Graph statistics for reports: op histogram, parameter count, FLOP estimate, unsupported ops.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace segmux::compiler {

struct GraphStats {
  std::map<std::string, int> op_histogram;  // "MatMul", "segmux.Linear", ...
  int64_t parameters = 0;                   // elements over all initializers
  size_t weight_bytes = 0;
  double flops = 0;                      // multiply-add = 2 FLOP; MatMul/Gemm/Conv/Linear/Attention only
  int nodes_without_flops_estimate = 0;  // heavy nodes whose shapes were unknown
  std::vector<std::string> unsupported;  // "Op: reason" (no schema / no reference kernel)
};

// Shapes should have been inferred (values without shapes give no FLOP estimate).
GraphStats graph_stats(const ir::Graph& g);
// FLOPs of one node (0 when it is not a heavy op or shapes are unknown).
double node_flops(const ir::Graph& g, const ir::Node& n);

}  // namespace segmux::compiler
