// segmux bench-frame at the tiny fixture size: it runs the product backend end to end (objects added
// through the mask-input path, a warm-up that fills the memory bank, timed frames) and its JSON has
// the documented shape. No timing is asserted.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include "common/run_command.h"
#include "common/tiny_fixture.h"

namespace {

std::pair<int, std::string> run_segmux(const std::string& args, bool with_stderr = true) {
  auto r = segmux::test::run_segmux(args, with_stderr ? "2>&1" : "2>/dev/null");
  return {r.code, r.out};
}

const std::string kFixture = segmux::test::tiny_fixture_dir();

std::string model_args(const std::filesystem::path& cache) {
  return segmux::test::tiny_model_args(cache.string(), "weights.pt");
}

}  // namespace

TEST(BenchFrame, TinyFixtureJson) {
  if (!std::filesystem::exists(kFixture + "/weights.pt")) GTEST_SKIP() << "no fixture at " << kFixture;
  auto cache = std::filesystem::path(::testing::TempDir()) / ("segmux_bench_frame_" + std::to_string(::getpid()));
  for (const char* precision : {"fp32", "bf16"}) {
    auto [code, out] = run_segmux(
        "bench-frame " + model_args(cache) + " --objects 3 --frames 2 --warmup 2 --precision " + precision + " --json",
        false);
    ASSERT_EQ(code, 0) << out;
    auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["objects"], 3);
    EXPECT_EQ(j["precision"], precision);
    EXPECT_EQ(j["timed_frames"], 2);
    ASSERT_TRUE(j["candidates"].is_object());
    for (const char* c : {"backbone", "detector", "propagation_decoder", "memory_encoder"}) {
      ASSERT_TRUE(j["candidates"].contains(c)) << c;
      EXPECT_GT(j["candidates"][c].get<double>(), 0) << c;
    }
    EXPECT_GT(j["total_seconds"].get<double>(), 0);
    EXPECT_GT(j["peak_rss_bytes"].get<double>(), 0);
    EXPECT_EQ(j["load_average_before"].size(), 3u);
  }
  std::filesystem::remove_all(cache);
}

// More objects than multiplex_count (4 in the tiny model) fill several buckets of the tracker state, as
// 32 / 64 objects do at full size (16 slots): the frame runs every bucket.
TEST(BenchFrame, ObjectsBeyondOneBucketFillSeveralBuckets) {
  if (!std::filesystem::exists(kFixture + "/weights.pt")) GTEST_SKIP() << "no fixture at " << kFixture;
  auto cache = std::filesystem::path(::testing::TempDir()) / ("segmux_bench_frame_b_" + std::to_string(::getpid()));
  auto [code, out] =
      run_segmux("bench-frame " + model_args(cache) + " --objects 9 --frames 1 --warmup 1 --json", false);
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["objects"], 9);
  EXPECT_EQ(j["buckets"], 3);
  EXPECT_GT(j["candidates"]["propagation_decoder"].get<double>(), 0);
  std::filesystem::remove_all(cache);
}

// --peer ort re-runs the last timed frame's recorded calls (kept in a temporary file while the frames run,
// read back afterwards) on our runtime and on ONNX Runtime: every candidate of the frame is there, timed.
TEST(BenchFrame, PeerReplaysTheRecordedCalls) {
  if (!std::filesystem::exists(kFixture + "/weights.pt")) GTEST_SKIP() << "no fixture at " << kFixture;
  auto cache = std::filesystem::path(::testing::TempDir()) / ("segmux_bench_frame_p_" + std::to_string(::getpid()));
  auto [code, out] =
      run_segmux("bench-frame " + model_args(cache) + " --objects 3 --frames 1 --warmup 1 --peer ort --json", false);
  if (code != 0 && out.empty()) {
    auto why = run_segmux("bench-frame " + model_args(cache) + " --objects 3 --frames 1 --warmup 1 --peer ort");
    if (why.second.find("not available") != std::string::npos) GTEST_SKIP() << why.second;
  }
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_TRUE(j.contains("peer")) << out;
  for (const char* c : {"backbone", "detector", "propagation_decoder", "memory_encoder"}) {
    ASSERT_TRUE(j["peer"]["candidates"].contains(c)) << c;
    const auto& r = j["peer"]["candidates"][c];
    EXPECT_EQ(r["calls"], 1) << c;
    EXPECT_GT(r["segmux_seconds"].get<double>(), 0) << c;
    EXPECT_TRUE(r.contains("peer_seconds")) << c << ": " << r.dump();
  }
  std::filesystem::remove_all(cache);
}

TEST(BenchFrame, TooManyObjectsIsAUsageError) {
  if (!std::filesystem::exists(kFixture + "/weights.pt")) GTEST_SKIP() << "no fixture at " << kFixture;
  auto cache = std::filesystem::path(::testing::TempDir()) / ("segmux_bench_frame_x_" + std::to_string(::getpid()));
  auto [code, out] = run_segmux("bench-frame " + model_args(cache) + " --objects 99");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("needs more than 8 multiplex buckets"), std::string::npos) << out;
  auto missing = run_segmux("bench-frame --weights /nonexistent.pt --objects 1");
  EXPECT_EQ(missing.first, 1) << missing.second;
  EXPECT_NE(missing.second.find("/nonexistent.pt"), std::string::npos) << missing.second;
  std::filesystem::remove_all(cache);
}
