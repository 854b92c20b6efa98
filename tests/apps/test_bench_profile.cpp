// segmux bench --profile: the trace file is Chrome trace-event JSON with one event per executed node
// and timed run; the JSON report carries the op-type and node tables; bad uses are clear errors.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/random_tensor.h"
#include "common/run_command.h"
#include "ir/builder.h"
#include "onnx/onnx_io.h"

using namespace segmux;

namespace {

std::pair<int, std::string> run_segmux(const std::string& args) {
  auto r = test::run_segmux(args);
  return {r.code, r.out};
}

}  // namespace

TEST(BenchProfile, TraceAndTables) {
  auto dir = std::filesystem::path(::testing::TempDir()) / ("segmux_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ir::Graph g;
  g.name = "prof";
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 32});
  int h = b.op1("MatMul", {x, b.constant(test::random_tensor({32, 32}, 1), "w")});
  h = b.op1("Tanh", {h});
  b.output(b.op1("Sigmoid", {h}), "y");
  onnx_io::export_onnx_file(g, (dir / "p.onnx").string());
  const std::string trace = (dir / "trace.json").string();

  auto [code, out] =
      run_segmux("bench " + (dir / "p.onnx").string() + " --warmup 1 --iters 3 --profile " + trace + " --json");
  ASSERT_EQ(code, 0) << out;
  auto rep = nlohmann::json::parse(out);
  ASSERT_TRUE(rep.contains("profile")) << out;
  EXPECT_EQ(rep["profile"]["runs"], 3);
  EXPECT_FALSE(rep["profile"]["op_types"].empty());
  EXPECT_FALSE(rep["profile"]["nodes"].empty());

  std::ifstream f(trace);
  auto j = nlohmann::json::parse(f);
  int node_events = 0, run_events = 0;
  for (auto& e : j["traceEvents"]) {
    if (e["ph"] == "C") continue;  // RSS counter samples
    EXPECT_EQ(e["ph"], "X");
    (e["cat"] == "run" ? run_events : node_events) += 1;
  }
  EXPECT_EQ(run_events, 3);
  EXPECT_EQ(node_events, rep["profile"]["events"].get<int>());
  EXPECT_EQ(node_events % 3, 0);
  EXPECT_GE(node_events, 3 * 3);  // MatMul (or its fused form), Tanh, Sigmoid per run

  auto text = run_segmux("bench " + (dir / "p.onnx").string() + " --warmup 0 --iters 1 --profile " + trace);
  EXPECT_EQ(text.first, 0) << text.second;
  EXPECT_NE(text.second.find("GFLOP/s"), std::string::npos) << text.second;

  auto session = run_segmux("bench " + (dir / "p.onnx").string() + " --engine session --profile " + trace);
  EXPECT_EQ(session.first, 2) << session.second;
  EXPECT_NE(session.second.find("--profile needs the compiled engine"), std::string::npos) << session.second;
  std::filesystem::remove_all(dir);
}

TEST(ThreadsDefault, EveryThreadsOptionDefaultsToTheMachineCores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const std::string want = "the cores this process may use, " + std::to_string(CPU_COUNT(&set)) + " here";
  for (const char* cmd : {"track", "bench", "bench-frame", "run"}) {
    auto [code, out] = run_segmux(std::string(cmd) + " --help");
    EXPECT_EQ(code, 0) << cmd;
    EXPECT_NE(out.find(want), std::string::npos) << cmd << ": " << out;
  }
}
