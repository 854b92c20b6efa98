// segmux slim / extract / --engine on the command line: results, exit codes and error messages.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/run_command.h"
#include "ir/builder.h"
#include "onnx/onnx_io.h"

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

// Every compiled file of a deploy package exports as ONNX, the memory encoder's image-size variant too.
TEST_F(RouteCli, ExportOnnxTakesEveryCompiledFileName) {
  const std::string fixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  if (!fs::exists(fixture + "/weights.safetensors")) GTEST_SKIP() << "no fixture at " << fixture;
  const std::string common = " --weights " + fixture + "/weights.safetensors --config " + fixture + "/config.json";
  Result r = segmux_cmd("export-onnx --candidate memory_encoder_image_size" + common + " -o " + path("mi.onnx"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = segmux_cmd("export-onnx --candidate memory_encoder" + common + " -o " + path("m.onnx"));
  ASSERT_EQ(r.code, 0) << r.out;
  // The variant is a different graph (its mask input has the image's size), not the plain candidate.
  const ir::Graph variant = onnx_io::import_onnx_file(path("mi.onnx"));
  const ir::Graph plain = onnx_io::import_onnx_file(path("m.onnx"));
  ASSERT_EQ(variant.inputs.size(), plain.inputs.size());
  bool some_shape_differs = false;
  for (size_t i = 0; i < plain.inputs.size(); ++i)
    some_shape_differs |= variant.value(variant.inputs[i]).shape != plain.value(plain.inputs[i]).shape;
  EXPECT_TRUE(some_shape_differs);
  r = segmux_cmd("export-onnx --candidate memory_encoder_image_size --variant fp32_mlp" + common + " -o " +
                 path("x.onnx"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "image_size_masks");
  r = segmux_cmd("export-onnx --candidate nope" + common + " -o " + path("x.onnx"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "memory_encoder_image_size");
}
