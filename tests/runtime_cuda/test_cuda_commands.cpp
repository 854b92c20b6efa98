// `--device cuda` in the product: a clear error without a device (or without the backend), the model's
// nodes without a CUDA kernel named before any device is touched, and the option checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "common/run_command.h"
#include "compiler/compile.h"
#include "ir/builder.h"
#include "kernels/cuda/cuda_memory.h"

namespace segmux {
namespace {

// x [4, 8] -> Relu (-> Tile, which has no CUDA kernel) compiled to a .smx file.
std::string write_model(const std::string& name, bool with_tile) {
  ir::Graph g;
  ir::GraphBuilder gb(g);
  int y = gb.op1("Relu", {gb.input("x", DType::f32, {4, 8})});
  if (with_tile) y = gb.op1("Tile", {y, gb.ints({2, 1})});
  gb.output(y, "y");
  const std::string path = ::testing::TempDir() + "/segmux_cuda_" + name + "_" + std::to_string(::getpid()) + ".smx";
  compiler::CompileOptions opt;
  compiler::write_compiled(path, compiler::compile_graph(std::move(g), opt), opt);
  return path;
}

TEST(CudaCommands, BenchWithoutADeviceIsAClearError) {
  std::string why;
  const bool device = cuda::usable_devices(&why) > 0;
  const std::string model = write_model("relu", false);
  const auto r = test::run_segmux("bench " + model + " --device cuda --warmup 0 --iters 1");
  if (device) {
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("compiled on cuda"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.out.find("error: CUDA backend: " + why), std::string::npos) << r.out;
  }
  std::remove(model.c_str());
}

TEST(CudaCommands, NodesWithoutAKernelAreNamedOnAnyMachine) {
  const std::string model = write_model("tile", true);
  const auto r = test::run_segmux("bench " + model + " --device cuda --warmup 0 --iters 1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("1 node(s) have no CUDA kernel (no CPU fallback)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no CUDA kernel for op Tile"), std::string::npos) << r.out;
  std::remove(model.c_str());
}

TEST(CudaCommands, OptionChecks) {
  const std::string model = write_model("opts", false);
  auto r = test::run_segmux("bench " + model + " --tf32");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--tf32 goes with --device cuda"), std::string::npos) << r.out;
  r = test::run_segmux("bench " + model + " --device gpu");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--device"), std::string::npos) << r.out;
  r = test::run_segmux("parity " + std::string(SEGMUX_SOURCE_DIR) +
                       "/tests/fixtures/sam31-tiny-image --video --device cuda");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--device cuda does not run --video yet"), std::string::npos) << r.out;
  std::remove(model.c_str());
}

}  // namespace
}  // namespace segmux
