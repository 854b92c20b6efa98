// Which videos of a manifest one batch process takes: shard I of N takes the items at positions
// I, I+N, I+2N, ... (so every item belongs to exactly one shard and shards differ by at most one video).
//
// `--shard I/N` names it; `--shard auto` reads it from the scheduler: a Slurm job array
// (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, and SLURM_ARRAY_TASK_MIN / _STEP for arrays like
// 1-16 or 0-30:2) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX; its count is not in the
// environment, so it comes from --shard-count).
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace segmux::pipeline {

struct Shard {
  int index = 0, count = 1;
  bool contains(size_t position) const { return int(position % size_t(count)) == index; }
  std::string describe() const;  // "2/8"
};

// The environment as a function (tests pass their own): the variable's value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// "I/N" (0 <= I < N), or "auto" from the environment; `count` is --shard-count (Kubernetes; for Slurm
// it must agree with SLURM_ARRAY_TASK_COUNT when given). Errors (segmux::Error) say what is wrong.
Shard parse_shard(const std::string& spec, const EnvLookup& env, std::optional<int> count = std::nullopt);

}  // namespace segmux::pipeline
