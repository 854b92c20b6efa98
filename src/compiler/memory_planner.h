// The static memory planner: liveness of every intermediate tensor over the node order, then
// best-fit offsets inside one arena per model.
//
// - A value is planned when a node produces it and its shape is static; graph inputs and weights
//   never live in the arena; values with data-dependent shapes are left to the executor (per run).
// - Lifetime of a value: [index of its producer, index of its last consumer]; graph outputs live to
//   the end. A node's inputs and outputs therefore never share bytes (kernels are not in-place), with
//   the two exceptions below, where no kernel writes over bytes another value still needs.
// - In-place reuse where legal: a view op (Reshape/Flatten/Squeeze/Unsqueeze/Identity) whose input
//   is in the arena gets its output on the same bytes; the node is then skipped at run time. The
//   shared buffer lives as long as the longest-lived alias.
// - Concat inputs and Split outputs that are contiguous, 64-byte aligned slices of the whole (every dim
//   before the axis is 1) live on their slice of it: producers write the concatenation in place and
//   Split's outputs are views; the kernels skip pieces already in place. A value takes one such place
//   (the first node that offers it), and a group that already holds slices is not placed again.
// - Best fit: buffers are placed largest first; each goes into the smallest free gap (among buffers
//   whose lifetimes overlap it) that holds it, else after the last of them.
#pragma once
#include "runtime/executor.h"

namespace segmux::compiler {

struct PlannerOptions {
  size_t alignment = 64;
  bool allow_views = true;
};

MemoryPlan plan_memory(const ir::Graph& g, const PlannerOptions& options = {});

// Lifetime of each value as the planner sees it ([first, last] node index; -1,-1 when unplanned).
// Exposed for tests and reports.
struct Lifetime {
  int first = -1;
  int last = -1;
};
std::vector<Lifetime> value_lifetimes(const ir::Graph& g);

}  // namespace segmux::compiler
