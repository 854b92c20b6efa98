// The `segmux track` command-line tests' suite: `segmux track` on the tiny fixture model's video, the
// tracks.json a run writes, and the check that a refused run names the problem and leaves no output.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_suite.h"
#include "common/run_command.h"
#include "common/tiny_fixture.h"

namespace segmux::test {

class TrackCli : public CliSuite {
 protected:
  // `segmux track` on the fixture video with `args`, the tiny model from the suite's own cache.
  static SplitResult track(const std::string& args) {
    return segmux("track " + tiny_fixture_dir() + "/video/frames " + args + " " + tiny_model_args(tmp("cache")) +
                  " --quiet --overlay none >/dev/null");
  }
  static nlohmann::json tracks_json(const std::string& out) {
    return nlohmann::json::parse(read_text((std::filesystem::path(out) / "tracks.json").string()));
  }
  static void expect_failure(const SplitResult& r, const std::string& out, const std::string& words) {
    EXPECT_NE(r.code, 0) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << "stderr: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << "a failed run left " << out;
  }
};

}  // namespace segmux::test
