// `segmux track` keeps its memory flat over a long video: the peak resident memory of a 1,000-frame run
// is within a bound of a 100-frame run of the same video. Before the fix `track` kept every frame's
// decisions (low-res tracker masks and state snapshots, ~120 KB a frame): 345 -> 453 MB (+108 MB) over
// these runs; after: 334 -> 341 MB (+7 MB). The video is generated (segmux sample-video), the model is
// the fixtures' tiny one.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/run_command.h"
#include "common/tiny_fixture.h"

namespace fs = std::filesystem;

namespace {

// Runs `segmux ARGS` (no shell) and returns its peak resident memory in KB; -1 if it failed.
long peak_rss_kb(const std::vector<std::string>& args) {
  std::vector<std::string> argv_s{std::string(SEGMUX_BINARY_DIR) + "/segmux"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) return -1;
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return usage.ru_maxrss;
}

}  // namespace

TEST(TrackMemory, ALongVideoKeepsResidentMemoryFlat) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "resident memory under ASan measures its shadow and quarantine; the Release run measures this";
#endif
  const fs::path dir = fs::path(::testing::TempDir()) / ("segmux_track_memory_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string video = (dir / "long.mp4").string(), cache = (dir / "cache").string();
  ASSERT_EQ(segmux::test::run_segmux("sample-video -n 1000 --size 64x48 " + video).code, 0);
  auto track = [&](int frames) {
    std::vector<std::string> args{"track",
                                  video,
                                  "--prompt",
                                  "shape",
                                  "--out",
                                  (dir / ("out" + std::to_string(frames))).string(),
                                  "--direction",
                                  "forward",
                                  "--max-frames",
                                  std::to_string(frames),
                                  "--overlay",
                                  "none",
                                  "--quiet",
                                  "--weights",
                                  segmux::test::tiny_fixture_dir() + "/weights.safetensors",
                                  "--config",
                                  segmux::test::tiny_fixture_dir() + "/config.json",
                                  "--vocab",
                                  segmux::test::tiny_vocab(),
                                  "--cache-dir",
                                  cache};
    return peak_rss_kb(args);
  };
  ASSERT_GT(track(2), 0);  // compiles the tiny model into the cache: not part of either measure
  const long short_run = track(100), long_run = track(1000);
  ASSERT_GT(short_run, 0);
  ASSERT_GT(long_run, 0);
  // 900 more frames may cost what a few frames' working set does, not what they all would.
  const long growth_kb = long_run - short_run;
  std::printf("track peak RSS: 100 frames %ld KB, 1000 frames %ld KB (+%ld KB)\n", short_run, long_run, growth_kb);
  EXPECT_LT(growth_kb, 16 * 1024) << "peak resident memory grew by " << growth_kb << " KB over 900 frames";
  fs::remove_all(dir);
}
