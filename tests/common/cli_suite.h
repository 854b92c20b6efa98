// A test suite that runs the `segmux` command: a scratch folder made before its first test and removed
// after its last, and `segmux ARGS` with stdout and stderr kept apart (stdout may carry a --json summary).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/run_command.h"

namespace segmux::test {

class CliSuite : public ::testing::Test {
 protected:
  // Named after the running suite and the process: suites and parallel ctest runs never share one.
  static void SetUpTestSuite() {
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
    root_ = std::filesystem::path(::testing::TempDir()) / ("segmux_" + suite + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(root_);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(root_); }
  static std::string tmp(const std::string& name) { return (root_ / name).string(); }
  static SplitResult segmux(const std::string& args) { return run_segmux_split(args, tmp("stderr.txt")); }

  static inline std::filesystem::path root_;
};

}  // namespace segmux::test
