// `segmux batch` end to end on the fixtures' tiny model: shards cover every video exactly once, each
// video's outputs equal a plain `segmux track` of it, a bad video is recorded and not retried, a rerun
// skips what is done without loading the model, SIGTERM leaves no partial output and exits 75, a video
// held by another live process is left to it (exit 75), and command-line mistakes exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_command.h"
#include "common/tiny_fixture.h"

namespace fs = std::filesystem;
using segmux::test::read_text;
using segmux::test::SplitResult;

namespace {

class BatchCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::path(::testing::TempDir()) / ("segmux_batch_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "videos");
    for (int frames : {3, 4, 5}) {
      const std::string gif = (root_ / "videos" / ("clip" + std::to_string(frames) + ".gif")).string();
      ASSERT_EQ(segmux("sample-video " + gif + " --frames " + std::to_string(frames) + " --size 64x48").code, 0);
    }
    std::ofstream(root_ / "videos" / "broken.mp4") << "not a video";
    std::ofstream(root_ / "m.txt") << "# three generated clips, the fixture frames, one unreadable file\n"
                                   << "videos/clip3.gif\nvideos/clip4.gif\n"
                                   << R"({"id": "fixture", "path": ")" << segmux::test::tiny_fixture_dir()
                                   << R"(/video/frames", "max_frames": 4, "prompts": ["shape"]})"
                                   << "\n"
                                   << "videos/broken.mp4\nvideos/clip5.gif\n";
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::string tmp(const std::string& name) { return (root_ / name).string(); }
  static SplitResult segmux(const std::string& args, const std::string& env = "") {
    return segmux::test::run_segmux_split(args, tmp("stderr.txt"), env);
  }
  static std::string model_args() {
    return segmux::test::tiny_model_args(tmp("cache")) + " --threads 2 --overlay none --prompt shape";
  }
  static SplitResult batch(const std::string& out, const std::string& extra, const std::string& env = "") {
    return segmux("batch " + tmp("m.txt") + " --out " + out + " " + model_args() + " " + extra, env);
  }
  // The masks and tracks.json frames of DIR/<id>/ equal those of `segmux track` on the same video.
  static void expect_same_as_track(const fs::path& got, const std::string& input, const std::string& extra) {
    const std::string want = tmp("track_" + got.filename().string());
    auto r = segmux("track " + input + " " + model_args() + " --out " + want + " --quiet " + extra);
    ASSERT_EQ(r.code, 0) << r.err;
    size_t pngs = 0;
    for (const auto& e : fs::directory_iterator(fs::path(want) / "masks")) {
      ++pngs;
      EXPECT_EQ(read_text((got / "masks" / e.path().filename()).string()), read_text(e.path().string()))
          << got << ": mask " << e.path().filename();
    }
    EXPECT_GT(pngs, 0u);
    auto a = nlohmann::json::parse(read_text((got / "tracks.json").string()));
    auto b = nlohmann::json::parse(read_text(want + "/tracks.json"));
    EXPECT_EQ(a["frames"], b["frames"]) << got;
    EXPECT_EQ(a["source"], b["source"]);
  }
  static fs::path root_;
};
fs::path BatchCli::root_;

TEST_F(BatchCli, ShardsDoEveryVideoOnceLikeTrack) {
  const std::string out = tmp("out");
  auto s0 = batch(out, "--shard 0/2 --json");
  auto s1 = batch(out, "--shard 1/2");
  // Items 0, 2, 4 (clip3, fixture, clip5) and 1, 3 (clip4, broken).
  EXPECT_EQ(s0.code, 0) << s0.err;
  EXPECT_EQ(s1.code, 3) << s1.err;
  EXPECT_NE(s1.err.find("failed broken:"), std::string::npos) << s1.err;
  for (const char* id : {"clip3", "clip4", "clip5", "fixture"}) EXPECT_TRUE(fs::is_directory(fs::path(out) / id)) << id;
  EXPECT_FALSE(fs::exists(fs::path(out) / "broken"));
  EXPECT_FALSE(fs::exists(fs::path(out) / ".staging")) << "staging left behind";
  auto record = nlohmann::json::parse(read_text(out + "/.failed/broken.json"));
  EXPECT_EQ(record["id"], "broken");
  EXPECT_FALSE(record["reason"].get<std::string>().empty());
  EXPECT_EQ(record["manifest_line"], 5);
  auto summary = nlohmann::json::parse(s0.out, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << s0.out;
  EXPECT_EQ(summary["done"], 3);
  EXPECT_EQ(summary["failed"], 0);
  EXPECT_GT(summary["frames_per_second"].get<double>(), 0);
  EXPECT_EQ(nlohmann::json::parse(read_text(out + "/.summary/shard-1-of-2.json"))["failed"], 1);
  EXPECT_EQ(s0.err.find("model:"), s0.err.rfind("model:")) << "the model is loaded once per process";

  expect_same_as_track(fs::path(out) / "clip4", tmp("videos/clip4.gif"), "");
  expect_same_as_track(fs::path(out) / "fixture", segmux::test::tiny_fixture_dir() + "/video/frames", "--max-frames 4");

  // A rerun: everything done or recorded; nothing tracked, no model loaded; the failure still reported.
  auto again = batch(out, "--shard 1/2 --json");
  EXPECT_EQ(again.code, 3) << again.err;
  EXPECT_EQ(again.err.find("model:"), std::string::npos) << again.err;
  auto s = nlohmann::json::parse(again.out, nullptr, false);
  ASSERT_FALSE(s.is_discarded()) << again.out;
  EXPECT_EQ(s["skipped"], 1);
  EXPECT_EQ(s["failed_earlier"], 1);
  EXPECT_EQ(s["done"], 0);
}

TEST_F(BatchCli, ShardAutoFromTheScheduler) {
  const std::string out = tmp("auto");
  auto r = batch(out, "--shard auto", "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0");
  EXPECT_EQ(r.code, 0) << r.err;  // items 1 and 4: clip4, clip5
  EXPECT_TRUE(fs::is_directory(out + "/clip4"));
  EXPECT_TRUE(fs::is_directory(out + "/clip5"));
  EXPECT_FALSE(fs::exists(out + "/clip3"));
  r = batch(out, "--shard auto --shard-count 3", "JOB_COMPLETION_INDEX=0");
  EXPECT_EQ(r.code, 3) << r.err;  // items 0 and 3: clip3, broken
  EXPECT_TRUE(fs::is_directory(out + "/clip3"));
  EXPECT_TRUE(fs::exists(out + "/.summary/shard-0-of-3.json"));
}

TEST_F(BatchCli, SigtermLeavesNoPartialOutputAndAsksForARetry) {
  const std::string long_gif = tmp("videos/long.gif"), out = tmp("term");
  ASSERT_EQ(segmux("sample-video " + long_gif + " --frames 400 --size 64x48").code, 0);
  std::ofstream(tmp("long.txt")) << long_gif << "\n";
  // Start, wait for the tenth frame's progress line, SIGTERM, and report the exit status.
  std::ofstream(tmp("term.sh")) << SEGMUX_BINARY_DIR << "/segmux batch " << tmp("long.txt") << " --out " << out << " "
                                << model_args() << " 2>" << tmp("term.err") << " & pid=$!\n"
                                << "for i in $(seq 600); do grep -q '(10/400)' " << tmp("term.err")
                                << " 2>/dev/null && break; sleep 0.1; done\n"
                                << "kill -TERM $pid; wait $pid; echo rc=$?\n";
  auto r = segmux::test::run_shell("bash " + tmp("term.sh"));
  EXPECT_NE(r.out.find("rc=75"), std::string::npos) << r.out << read_text(tmp("term.err"));
  EXPECT_NE(read_text(tmp("term.err")).find("stopped: SIGTERM"), std::string::npos) << read_text(tmp("term.err"));
  EXPECT_FALSE(fs::exists(out + "/long")) << "partial output after SIGTERM";
  EXPECT_FALSE(fs::exists(out + "/.staging")) << "staging left after SIGTERM";
  EXPECT_FALSE(fs::exists(out + "/.failed/long.json")) << "an interrupted video is not a failed one";
}

TEST_F(BatchCli, AVideoHeldByAnotherLiveProcessIsLeftToItAndRetried) {
  const std::string out = tmp("held");
  fs::create_directories(out + "/.staging");
  // Another process (flock(1) here) holds clip4's claim for the whole run of shard 1/3 (clip4, clip5).
  auto r = segmux::test::run_shell("flock " + out + "/.staging/clip4.lock " + std::string(SEGMUX_BINARY_DIR) +
                                   "/segmux batch " + tmp("m.txt") + " --out " + out + " " + model_args() +
                                   " --shard 1/3 --json 2>/dev/null");
  EXPECT_EQ(r.code, 75) << r.out;
  auto s = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(s.is_discarded()) << r.out;
  EXPECT_EQ(s["busy"], 1);
  EXPECT_EQ(s["done"], 1);
  EXPECT_FALSE(fs::exists(out + "/clip4")) << "a held video was tracked";
  EXPECT_TRUE(fs::is_directory(out + "/clip5"));
  EXPECT_EQ(batch(out, "--shard 1/3").code, 0) << "the retry does it";
  EXPECT_TRUE(fs::is_directory(out + "/clip4"));
}

TEST_F(BatchCli, MistakesExitWithTheRightCode) {
  const std::string out = tmp("usage");
  auto r = segmux("batch " + tmp("m.txt") + " --out " + out + " --prompt shape");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no model"), std::string::npos);
  EXPECT_EQ(batch(out, "--shard 2/2").code, 2);
  r = batch(out, "--shard auto");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("SLURM_ARRAY_TASK_ID"), std::string::npos) << r.err;
  EXPECT_EQ(batch(out, "--shard-count 2").code, 2);
  r = batch(out, "--threads 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--threads: 0 is out of range"), std::string::npos) << r.err;
  r = segmux("batch --help");
  EXPECT_EQ(r.code, 0);
  for (const char* word : {"segmux batch", "--shard", "--shard-count", "MANIFEST", "75"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word << " missing from --help";
  std::ofstream(tmp("noprompt.txt")) << tmp("videos/clip3.gif") << "\n";
  r = segmux("batch " + tmp("noprompt.txt") + " --out " + out + " " + segmux::test::tiny_model_args(tmp("cache")));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no prompt for 'clip3'"), std::string::npos) << r.err;
  // A model that cannot be loaded is no video's fault: fatal, nothing recorded as failed.
  r = segmux("batch " + tmp("m.txt") + " --out " + out + " --model " + tmp("no-such-package") +
             " --prompt shape --overlay none");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot load the model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out + "/.failed/clip3.json")) << "the model's failure was blamed on a video";
  EXPECT_FALSE(fs::exists(out + "/.staging/clip3")) << "staging left after a fatal error";
  fs::remove_all(out);
  std::ofstream(tmp("bad.txt")) << "{\"path\": 3}\n";
  r = segmux("batch " + tmp("bad.txt") + " --out " + out + " " + model_args());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("bad.txt line 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "a refused run made its output folder";
}

}  // namespace
