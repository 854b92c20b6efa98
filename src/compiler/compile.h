// The compile driver: IR graph -> fixed input shapes -> passes -> verification -> memory plan, and
// the offline model file around it.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>

#include "compiler/memory_planner.h"
#include "compiler/pass_manager.h"
#include "runtime/executor.h"
#include "runtime/offline_model.h"

namespace segmux::compiler {

struct CompileOptions {
  std::map<std::string, Shape> input_shapes;  // fixes graph input shapes ("name" -> dims)
  std::string precision = "fp32";             // fp32 | bf16
  std::set<std::string> skip_passes;
  std::string target_isa = "native";  // native (= host_isa()) | generic | x86-64-avx512
  FoldOptions fold;
  bool strided_views = true;  // false for the CUDA executor: its kernels read no strided views
  int max_rounds = 10;
  std::string command_line;  // recorded in the file's META section
};

struct CompileResult {
  ir::Graph graph;  // the final graph: every value has a static shape (unless data-dependent)
  MemoryPlan plan;
  PassReport passes;
  std::string target_isa;
};

// Every graph output must end with a static shape; the graph is verified before and after the passes.
CompileResult compile_graph(ir::Graph g, const CompileOptions& opt = {});

// Writes the compiled model (atomically) with options and pass statistics in its META section.
void write_compiled(const std::string& path, const CompileResult& r, const CompileOptions& opt);

}  // namespace segmux::compiler
