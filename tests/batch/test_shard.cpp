// Shard selection of `segmux batch`: I/N, Slurm job arrays (with a minimum and a step), Kubernetes
// Indexed Jobs, and every item in exactly one shard.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "pipeline/batch/shard.h"

using segmux::pipeline::EnvLookup;
using segmux::pipeline::parse_shard;
using segmux::pipeline::Shard;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const std::string& spec, const EnvLookup& env, std::optional<int> count = std::nullopt) {
  try {
    parse_shard(spec, env, count);
  } catch (const segmux::Error& e) {
    return e.what();
  }
  return "";
}

const EnvLookup kNoEnv = env_of({});

}  // namespace

TEST(BatchShard, IndexOfCount) {
  Shard s = parse_shard("2/5", kNoEnv);
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.describe(), "2/5");
  for (const char* bad : {"5/5", "1", "-1/3", "a/b", "1/0", "/3", "1/", "0/99999999999"})
    EXPECT_NE(error_of(bad, kNoEnv), "") << bad;
  EXPECT_NE(error_of("0/2", kNoEnv, 3).find("disagrees"), std::string::npos);
}

TEST(BatchShard, EveryItemInExactlyOneShard) {
  for (int n = 1; n <= 7; ++n)
    for (size_t item = 0; item < 50; ++item) {
      int owners = 0;
      for (int i = 0; i < n; ++i) owners += Shard{i, n}.contains(item);
      EXPECT_EQ(owners, 1) << "item " << item << " of " << n << " shards";
    }
}

TEST(BatchShard, SlurmArray) {
  Shard s = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  // --array=1-8: ids 1..8 are shards 0..7.
  s = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "1"},
                                  {"SLURM_ARRAY_TASK_COUNT", "8"},
                                  {"SLURM_ARRAY_TASK_MIN", "1"},
                                  {"SLURM_ARRAY_TASK_MAX", "8"}}));
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 8);
  // --array=0-10:5: ids 0, 5, 10.
  s = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "10"},
                                  {"SLURM_ARRAY_TASK_COUNT", "3"},
                                  {"SLURM_ARRAY_TASK_MIN", "0"},
                                  {"SLURM_ARRAY_TASK_STEP", "5"}}));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  // --array=1,5,9 (gaps, no step): id 9 lies past the count.
  EXPECT_NE(
      error_of("auto",
               env_of({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}}))
          .find("gaps"),
      std::string::npos);
  EXPECT_NE(error_of("auto", env_of({{"SLURM_ARRAY_TASK_ID", "1"}})).find("SLURM_ARRAY_TASK_COUNT is not set"),
            std::string::npos);
  EXPECT_NE(error_of("auto", env_of({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "2"}}))
                .find("not a whole number"),
            std::string::npos);
}

TEST(BatchShard, KubernetesIndexedJob) {
  Shard s = parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "4"}}), 6);
  EXPECT_EQ(s.index, 4);
  EXPECT_EQ(s.count, 6);
  EXPECT_NE(error_of("auto", env_of({{"JOB_COMPLETION_INDEX", "4"}})).find("--shard-count"), std::string::npos);
  EXPECT_NE(error_of("auto", env_of({{"JOB_COMPLETION_INDEX", "6"}}), 6).find("not below"), std::string::npos);
  EXPECT_NE(error_of("auto", kNoEnv).find("neither SLURM_ARRAY_TASK_ID"), std::string::npos);
  EXPECT_NE(error_of("auto", kNoEnv, 0).find("at least 1"), std::string::npos);
}
