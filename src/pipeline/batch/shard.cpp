#include "pipeline/batch/shard.h"

#include <cstdlib>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

// A whole number 0..2^31-1 from text, or nullopt.
std::optional<int> whole_number(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(s);
}

int env_number(const EnvLookup& env, const std::string& name) {
  const auto v = env(name);
  SEGMUX_CHECK(v, "--shard auto: ", name, " is not set");
  const auto n = whole_number(*v);
  SEGMUX_CHECK(n, "--shard auto: ", name, "='", *v, "' is not a whole number");
  return *n;
}

Shard from_slurm(const EnvLookup& env, std::optional<int> count) {
  const int id = env_number(env, "SLURM_ARRAY_TASK_ID");
  const int n = env_number(env, "SLURM_ARRAY_TASK_COUNT");
  const int min = env("SLURM_ARRAY_TASK_MIN") ? env_number(env, "SLURM_ARRAY_TASK_MIN") : 0;
  const int step = env("SLURM_ARRAY_TASK_STEP") ? env_number(env, "SLURM_ARRAY_TASK_STEP") : 1;
  SEGMUX_CHECK(step >= 1 && id >= min && (id - min) % step == 0, "--shard auto: SLURM_ARRAY_TASK_ID ", id,
               " is not in the array ", min, "-...:", step,
               " (an array with gaps, like 1,5,9, cannot be sharded: give ", "--shard I/N)");
  Shard s{(id - min) / step, n};
  SEGMUX_CHECK(n >= 1 && s.index < n, "--shard auto: SLURM_ARRAY_TASK_ID ", id, " is past SLURM_ARRAY_TASK_COUNT ", n,
               " (an array with gaps cannot be sharded: give --shard I/N)");
  SEGMUX_CHECK(!count || *count == n, "--shard-count ", count.value_or(0), " disagrees with SLURM_ARRAY_TASK_COUNT ",
               n);
  return s;
}

}  // namespace

std::string Shard::describe() const { return std::to_string(index) + "/" + std::to_string(count); }

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Shard parse_shard(const std::string& spec, const EnvLookup& env, std::optional<int> count) {
  SEGMUX_CHECK(!count || *count >= 1, "--shard-count ", count.value_or(0), " must be at least 1");
  if (spec == "auto") {
    if (env("SLURM_ARRAY_TASK_ID")) return from_slurm(env, count);
    SEGMUX_CHECK(env("JOB_COMPLETION_INDEX"), "--shard auto: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor ",
                 "JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set; give --shard I/N");
    SEGMUX_CHECK(count, "--shard auto in a Kubernetes Indexed Job needs --shard-count N (the Job's completions)");
    const int index = env_number(env, "JOB_COMPLETION_INDEX");
    SEGMUX_CHECK(index < *count, "--shard auto: JOB_COMPLETION_INDEX ", index, " is not below --shard-count ", *count);
    return {index, *count};
  }
  const auto slash = spec.find('/');
  const auto index = whole_number(spec.substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : whole_number(spec.substr(slash + 1));
  SEGMUX_CHECK(index && n, "--shard '", spec, "' is not I/N (shard I of N, counted from 0) or auto");
  SEGMUX_CHECK(*n >= 1 && *index < *n, "--shard ", spec, ": the index must be 0..", *n - 1,
               " (shards are counted from 0)");
  SEGMUX_CHECK(!count || *count == *n, "--shard-count ", *count, " disagrees with --shard ", spec);
  return {*index, *n};
}

}  // namespace segmux::pipeline
