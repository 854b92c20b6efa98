// Issue 9 point 5: --threads defaults to the cores the process may use (its CPU affinity) in every
// command that runs a model, not a fixed 2; checked through --help, also under a narrowed affinity.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include "common/run_command.h"

namespace {

std::pair<int, std::string> run_segmux(const std::string& args) {
  auto r = segmux::test::run_segmux(args);
  return {r.code, r.out};
}

const char* const kCommands[] = {"track", "segment", "serve",          "bench", "bench-frame", "run",
                                 "check", "parity",  "verify-package", "slim",  "deploy",      "fullsize-check"};

void expect_default(int cores) {
  const std::string want = "the cores this process may use, " + std::to_string(cores) + " here";
  for (const char* cmd : kCommands) {
    auto [code, out] = run_segmux(std::string(cmd) + " --help");
    EXPECT_EQ(code, 0) << cmd;
    EXPECT_NE(out.find(want), std::string::npos) << cmd << ": " << out;
  }
}

}  // namespace

TEST(ThreadsDefault, EveryCommandThatRunsAModel) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  expect_default(CPU_COUNT(&set));
}

TEST(ThreadsDefault, FollowsANarrowedAffinity) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: nothing to narrow";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // inherited by the commands popen starts
  expect_default(1);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
}
