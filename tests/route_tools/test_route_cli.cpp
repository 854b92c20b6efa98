// segmux slim / extract / --engine on the command line: results, exit codes and error messages.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "ir/builder.h"
#include "onnx/onnx_io.h"
#include "common/run_command.h"

using namespace segmux;
namespace fs = std::filesystem;

namespace {

using Result = segmux::test::CommandResult;  // out: stdout and stderr

Result segmux_cmd(const std::string& args, const std::string& env = "") {
  return segmux::test::run_segmux(args, "2>&1", env);
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

class RouteCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("segmux_route_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ir::Graph g;
    g.name = "small";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {2, 4});
    int c = b.op1("Add", {b.scalar_f32(1.0f), b.scalar_f32(2.0f)});  // folds
    int h = b.op1("Identity", {b.op1("Mul", {x, c})});
    g.value(h).name = "hidden";
    b.output(b.op1("Relu", {h}), "y");
    onnx_io::export_onnx_file(g, path("small.onnx"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
};
fs::path RouteCli::dir_;

}  // namespace

TEST_F(RouteCli, SlimWritesAndVerifies) {
  Result r = segmux_cmd("slim " + path("small.onnx") + " -o " + path("slim.onnx"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "nodes 4 -> 2");
  EXPECT_HAS(r.out, "reference: pass");
  EXPECT_HAS(r.out, "verdict: PASS");
  EXPECT_TRUE(fs::exists(path("slim.onnx")));
  r = segmux_cmd("slim " + path("small.onnx") + " -o " + path("small.onnx"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "would overwrite");
}

TEST_F(RouteCli, ExtractWritesAndRefusesBadNames) {
  Result r = segmux_cmd("extract " + path("small.onnx") + " --inputs hidden --outputs y -o " + path("sub.onnx"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "1 of 4 nodes, 1 inputs, 1 outputs");
  r = segmux_cmd("extract " + path("small.onnx") + " --inputs hiden --outputs y -o " + path("bad.onnx"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "segmux: error: extract: input 'hiden' is not a tensor of the model; nearest names: 'hidden'");
  r = segmux_cmd("extract " + path("small.onnx") + " --outputs y,hidden -o " + path("bad.onnx"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "needs 'x', which is a model input that is not among the given inputs");
  EXPECT_FALSE(fs::exists(path("bad.onnx")));
}

TEST_F(RouteCli, EngineOrtWithoutOnnxRuntimeSaysSo) {
  const std::string frames = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video/frames";
  Result r = segmux_cmd("track " + frames + " --prompt shape --demo --engine ort -q --cache-dir " + path("cache") +
                            " --out " + path("out"),
                        "SEGMUX_ORT_LIB=/nonexistent/libonnxruntime.so");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "segmux: error: engine \"ort\" is not available: cannot load ONNX Runtime");
  EXPECT_FALSE(fs::exists(path("out")));
  r = segmux_cmd("parity --video " + std::string(SEGMUX_FIXTURES) + "/sam31-tiny --engine tensorrt");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--engine");
}

TEST_F(RouteCli, EngineOrtOnAFolderWithoutOnnxFilesNamesTheMissingFile) {
  Result probe = segmux_cmd("slim " + path("small.onnx") + " -o " + path("probe.onnx"));
  if (probe.out.find("onnxruntime: not run") != std::string::npos) GTEST_SKIP() << "ONNX Runtime is not available";
  const std::string frames = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video/frames";
  // The demo model is a folder of compiled files only: no onnx/ (a package brings them).
  Result r = segmux_cmd("track " + frames + " --prompt shape --demo --engine ort -q --cache-dir " + path("cache") +
                        " --out " + path("out2"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "lacks onnx/text_encoder.onnx");
  EXPECT_FALSE(fs::exists(path("out2")));
}
