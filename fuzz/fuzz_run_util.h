// Shared by the fuzz targets that run what they load: runs a compiled graph on fixed inputs when it is
// small enough for one fuzzing iteration (hostile graphs may legitimately ask for any size; the
// runtime's own limits are not what these targets test).
#pragma once
#include "ir/graph.h"
#include "runtime/executor.h"

namespace segmux::fuzz {

constexpr int64_t kMaxRunElements = int64_t(1) << 18;  // per value
constexpr size_t kMaxRunArenaBytes = size_t(16) << 20;

// True when every value has a static shape within the budget (data-dependent sizes are skipped).
inline bool small_enough_to_run(const ir::Graph& g, const MemoryPlan& plan) {
  if (plan.arena_bytes > kMaxRunArenaBytes) return false;
  for (const ir::Value& v : g.values) {
    if (!v.has_shape) return false;
    int64_t n = 1;
    for (int64_t d : v.shape) {
      if (d < 0 || (d > 0 && n > kMaxRunElements / d)) return false;
      n *= d;
    }
    if (n > kMaxRunElements) return false;
  }
  return true;
}

// Inputs of small values (integers 0/1: often indices), then one run. Errors are segmux::Errors.
inline void run_if_small(const ir::Graph& g, const MemoryPlan& plan, bool optimized_kernels) {
  if (!small_enough_to_run(g, plan)) return;
  std::map<std::string, Tensor> inputs;
  for (int id : g.inputs) {
    const ir::Value& v = g.value(id);
    Tensor t(v.dtype, v.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set_from_double(i, dtype_is_float(v.dtype) ? double(i % 5) * 0.25 - 0.5 : double(i % 2));
    inputs.emplace(v.name, std::move(t));
  }
  Executor ex(g, plan, ExecutorOptions{1, optimized_kernels});
  ex.run(inputs);
}

}  // namespace segmux::fuzz
