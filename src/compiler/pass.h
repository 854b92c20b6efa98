// Graph-to-graph passes of the compiler. A pass returns true when it changed the graph.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace segmux::compiler {

struct Pass {
  std::string name;
  std::function<bool(ir::Graph&)> run;
};

}  // namespace segmux::compiler
