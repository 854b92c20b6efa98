// segmux bench-frame --peer ort at the tiny fixture size: the frame's candidate calls are timed on
// ONNX Runtime too and the JSON's "peer" object carries both figures; without ONNX Runtime the command
// says the peer is not available. No timing is asserted beyond "positive".
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/run_command.h"
#include "common/tiny_fixture.h"
#include "pipeline/backends/ort_backend.h"

namespace {

std::pair<int, std::string> run_segmux(const std::string& args, bool with_stderr, const std::string& env = "") {
  auto r = segmux::test::run_segmux(args, with_stderr ? "2>&1" : "2>/dev/null", env);
  return {r.code, r.out};
}

const std::string kFixture = segmux::test::tiny_fixture_dir();

std::string model_args(const std::filesystem::path& cache) {
  return segmux::test::tiny_model_args(cache.string(), "weights.pt");
}

}  // namespace

TEST(BenchFramePeer, OrtFiguresAppearForEveryCandidate) {
  if (!std::filesystem::exists(kFixture + "/weights.pt")) GTEST_SKIP() << "no fixture at " << kFixture;
  std::string why;
  if (!segmux::pipeline::engine_available("ort", &why)) GTEST_SKIP() << why;
  auto cache = std::filesystem::path(::testing::TempDir()) / ("segmux_bench_peer_" + std::to_string(::getpid()));
  auto [code, out] =
      run_segmux("bench-frame " + model_args(cache) + " --objects 2 --frames 1 --warmup 1 --peer ort --json", false);
  ASSERT_EQ(code, 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_TRUE(j.contains("peer")) << out;
  const auto& peer = j["peer"];
  EXPECT_EQ(peer["engine"], "onnxruntime");
  EXPECT_EQ(peer["segmux_precision"], "fp32");
  ASSERT_TRUE(peer["candidates"].is_object());
  for (const char* c : {"backbone", "detector", "propagation_decoder", "memory_encoder"}) {
    ASSERT_TRUE(peer["candidates"].contains(c)) << c << ": " << peer.dump();
    const auto& r = peer["candidates"][c];
    EXPECT_FALSE(r.contains("error")) << c << ": " << r.dump();
    EXPECT_GE(r["calls"].get<int>(), 1) << c;
    EXPECT_GT(r["segmux_seconds"].get<double>(), 0) << c;
    EXPECT_GT(r["peer_seconds"].get<double>(), 0) << c;
    EXPECT_GT(r["ratio"].get<double>(), 0) << c;
  }
  // The ONNX candidates were exported into the cache entry the run used.
  EXPECT_TRUE(std::filesystem::exists(j["model_dir"].get<std::string>() + "/onnx/backbone.onnx"));
  // The text report names both engines per candidate.
  auto text = run_segmux("bench-frame " + model_args(cache) + " --objects 1 --frames 1 --warmup 1 --peer ort", true);
  ASSERT_EQ(text.first, 0) << text.second;
  EXPECT_NE(text.second.find("ratio = segmux / ort"), std::string::npos) << text.second;
  EXPECT_NE(text.second.find("propagation_decoder"), std::string::npos) << text.second;
  std::filesystem::remove_all(cache);
}

TEST(BenchFramePeer, WithoutOnnxRuntimeThePeerIsNotAvailable) {
  if (!std::filesystem::exists(kFixture + "/weights.pt")) GTEST_SKIP() << "no fixture at " << kFixture;
  auto cache = std::filesystem::path(::testing::TempDir()) / ("segmux_bench_nopeer_" + std::to_string(::getpid()));
  // Where ONNX Runtime is there, a library that does not load stands for a build or machine without it.
  const std::string env =
      segmux::pipeline::engine_available("ort", nullptr) ? "SEGMUX_ORT_LIB=/nonexistent/libonnxruntime.so " : "";
  auto [code, out] = run_segmux("bench-frame " + model_args(cache) + " --peer ort", true, env);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("--peer ort: the peer is not available"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(cache)) << "nothing compiled before the peer check";
  auto bad = run_segmux("bench-frame " + model_args(cache) + " --peer tensorrt", true);
  EXPECT_EQ(bad.first, 2) << bad.second;
  EXPECT_NE(bad.second.find("--peer"), std::string::npos) << bad.second;
  std::filesystem::remove_all(cache);
}
