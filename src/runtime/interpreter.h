// Interpreter: runs an IR graph. Kernels are created once at construction (weights prepacked then);
// run() infers shapes from the actual inputs, allocates outputs and runs nodes in order.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace segmux {

struct InterpreterOptions {
  int num_threads = 2;
  bool use_optimized_kernels = true;  // false: reference kernels only
};

class Interpreter {
 public:
  Interpreter(ir::Graph graph, InterpreterOptions options = {});
  ~Interpreter();
  // Inputs by graph input name; every graph input must be given with its declared dtype and shape.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  const ir::Graph& graph() const { return graph_; }
  // Which provider runs each node (for inspect/bench reports).
  const std::vector<std::string>& node_providers() const { return node_providers_; }

 private:
  ir::Graph graph_;
  InterpreterOptions options_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<std::string> node_providers_;
};

}  // namespace segmux
