// Executor: runs a compiled model (a final graph plus its static memory plan).
//
// Unlike Interpreter, which allocates every intermediate tensor per run, the Executor
//  - creates every kernel once, at construction (weights may be prepacked then);
//  - allocates ONE arena per model at construction, touches it once (first touch of fresh memory is
//    very slow on our machines), and reuses it for every run;
//  - places each intermediate tensor at the offset the memory planner chose;
//  - skips "view" nodes (Reshape/Flatten/Squeeze/Unsqueeze/Identity) whose output the planner placed on
//    the same bytes as their input;
//  - copies graph outputs out of the arena at the end of run(): returned tensors own their memory and
//    stay valid after the next run.
// Inputs are read in place from the caller's tensors (never copied). One run at a time per Executor
// (run() holds a mutex); use one Executor per thread for concurrency.
// Values the planner could not place (data-dependent shapes such as NonZero) are allocated per run.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace segmux {

// A static memory plan: where each value lives inside one arena.
struct MemoryPlan {
  static constexpr int64_t kNotPlanned = -1;
  size_t arena_bytes = 0;
  size_t sum_tensor_bytes = 0;   // what the planned tensors would take without any reuse
  std::vector<int64_t> offsets;  // per value id: byte offset in the arena, or kNotPlanned
  std::vector<char> view_nodes;  // per node: 1 when its output aliases its input (the kernel is skipped)
  size_t alignment = 64;
};

// What the executor tells a node observer after each kernel it ran (view nodes run no kernel and are
// not reported). The tensors are valid only during the call.
struct NodeRun {
  size_t index;  // node index in graph().nodes
  const ir::Node& node;
  const std::vector<const Tensor*>& inputs;  // nullptr where omitted
  const std::vector<Tensor*>& outputs;
  std::chrono::steady_clock::time_point start, end;
};
using NodeObserver = std::function<void(const NodeRun&)>;

// One arena for several executors that never run at the same time (the candidates of one tracked frame
// run one after another): its size is the largest plan, not the sum. Executors sharing it take its
// mutex for each run(), so concurrent calls wait rather than overwrite each other's intermediates.
class SharedArena {
 public:
  // Grows to at least `bytes` (zero-filled: the one first touch of the new size); executors make their
  // views on it at each run.
  void reserve(size_t bytes);
  size_t bytes() const { return storage_ ? storage_->nbytes : 0; }

 private:
  friend class Executor;
  std::mutex mutex_;
  std::shared_ptr<Storage> storage_;
};

struct ExecutorOptions {
  int num_threads = 2;
  bool use_optimized_kernels = true;          // false: reference kernels only
  std::shared_ptr<SharedArena> shared_arena;  // null: the executor allocates its own arena
};

class Executor {
 public:
  // The graph must already have had shape inference (the offline loader and the compiler do this).
  Executor(ir::Graph graph, MemoryPlan plan, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Inputs by graph input name (declared dtype and shape). Outputs by graph output name, copied out.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  // The same, copying out only the outputs named in `wanted` (the others are computed but stay in the
  // arena: no copy, no memory); a name that is not an output of the graph is an error.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs,
                                    const std::vector<std::string>& wanted);

  const ir::Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }
  const std::vector<std::string>& node_providers() const { return node_providers_; }
  size_t prepacked_bytes() const;
  // Per-node timing hook (the profiler): called after every kernel of every later run(); an empty
  // function turns it off, and then run() reads no clock.
  void set_node_observer(NodeObserver observer) { observer_ = std::move(observer); }

 private:
  ir::Graph graph_;
  MemoryPlan plan_;
  ExecutorOptions options_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<std::string> node_providers_;
  std::shared_ptr<Storage> arena_;  // own, or the shared arena's storage the views were made on
  void make_views();
  std::vector<Tensor> planned_views_;  // per value: the arena view (undefined when not planned)
  std::mutex run_mutex_;
  NodeObserver observer_;
};

// Checks a plan against a graph: every offset inside the arena, ids in range, sizes known.
// Throws segmux::Error naming the first problem (used by the offline loader on untrusted files).
void validate_plan(const ir::Graph& g, const MemoryPlan& plan);

// Ops whose output may share its input's bytes (pure re-interpretations of a contiguous buffer).
bool is_view_op(const ir::Node& node);

}  // namespace segmux
