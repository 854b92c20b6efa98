// The command line's error contract, run as the built binary: "segmux: error: <what>: <why>" on
// stderr, exit 2 for usage errors and 1 for failures, never a signal; hostile files and values included.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/run_command.h"
#include "io/npy.h"
#include "ir/builder.h"
#include "onnx/onnx_io.h"

using namespace segmux;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;    // exit status; -1 when killed by a signal
  int signal = 0;   // the signal that killed it
  std::string err;  // stderr
};

// Runs `segmux ARGS`, keeping stderr only (stdout is dropped).
Outcome segmux_stderr(const std::string& args) {
  auto run = segmux::test::run_segmux(args, "2>&1 >/dev/null");
  Outcome r;
  r.code = run.code;
  r.err = run.out;
  // popen runs sh -c: a signal shows as 128+N from the shell.
  if (r.code > 128) r.signal = r.code - 128;
  return r;
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("segmux_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ir::Graph g;
    g.name = "tiny";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {2, 4});
    b.output(b.op1("Relu", {x}), "y");
    onnx_io::export_onnx_file(g, path("tiny.onnx"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
};
fs::path Cli::dir_;

}  // namespace

TEST_F(Cli, ThreadsIsOneValidatedRangeForEveryCommand) {
  const std::string run = "run " + path("tiny.onnx") + " --random --output " + path("o.safetensors");
  ASSERT_EQ(segmux_stderr(run + " --threads 1").code, 0);
  for (const std::string value : {"65536", "0", "-1", "-65536", "abc", "2.5", "99999999999999999999"}) {
    Outcome r = segmux_stderr(run + " --threads " + value);
    SCOPED_TRACE(value);
    EXPECT_EQ(r.signal, 0);  // 65536 was SIGSEGV inside the OpenMP runtime
    EXPECT_EQ(r.code, 2);
    EXPECT_HAS(r.err, "segmux: error: run: --threads");
  }
  EXPECT_HAS(segmux_stderr(run + " --threads 65536").err, "from 1 to");
  // Every command with a --threads option checks it the same way, before doing anything else.
  for (const std::string& cmd :
       {"run " + path("tiny.onnx") + " --random --output " + path("o.safetensors"), "bench " + path("tiny.onnx"),
        "parity " + path("nothing"), "track " + path("nothing.mp4") + " --prompt dog --out " + path("out") + " --demo",
        std::string("fullsize-check")}) {
    Outcome r = segmux_stderr(cmd + " --threads 0");
    SCOPED_TRACE(cmd);
    EXPECT_EQ(r.code, 2);
    EXPECT_HAS(r.err, "--threads: 0 is out of range");
  }
}

TEST_F(Cli, UsageErrorsExit2FailuresExit1InOneStyle) {
  struct Case {
    std::string args;
    int code;
    std::string message;  // part of stderr, after "segmux: error: "
  };
  const std::string model = path("tiny.onnx"), out = " --output " + path("o.safetensors");
  {
    std::ofstream(path("empty.smx"));
    std::ofstream(path("text.smx")) << "not a compiled model";
  }
  const std::vector<Case> cases = {
      // Usage: CLI11's own errors exited 105..114 before.
      {"run", 2, "run: model is required"},
      {"run " + model, 2, "run: --output is required"},
      {"run " + model + out + " --no-such-option", 2, "run: The following argument was not expected"},
      {"run " + model + out + " --engine warp", 2, "run: --engine"},
      {"run " + model + out + " --input-shape x:2,abc", 2, "run: --input-shape 'x:2,abc'"},
      {"run " + model + out + " --input x", 2, "run: --input 'x': expected NAME=FILE"},
      {"inspect", 2, "inspect: model is required"},
      {"frobnicate", 2, "unknown command 'frobnicate'"},
      // Failures: the thing at fault named.
      {"run " + path("missing.onnx") + out, 1, path("missing.onnx")},
      {"run " + path("empty.smx") + out + " --random", 1, "not a segmux offline model (.smx)"},
      {"inspect " + path("empty.smx") + " --json", 1, "not a segmux offline model (.smx)"},
      {"inspect " + path("text.smx"), 1, "not a segmux offline model (.smx)"},
      {"check " + path("empty.smx"), 1, "not a segmux offline model (.smx)"},
  };
  for (const Case& c : cases) {
    Outcome r = segmux_stderr(c.args);
    SCOPED_TRACE(c.args);
    EXPECT_EQ(r.code, c.code);
    EXPECT_EQ(r.err.rfind("segmux: error: ", 0), 0u) << r.err;
    EXPECT_HAS(r.err, c.message);
  }
  // --help is not an error.
  EXPECT_EQ(segmux_stderr("run --help").code, 0);
}

TEST_F(Cli, FileNamesThatAreNotUtf8ReachJsonOutputIntact) {
  // Before: the JSON library's "[json.exception.type_error.316] invalid UTF-8 byte" as the error.
  const std::string odd = path("caf\xe9.onnx"), odd_smx = path("caf\xe9.smx");
  fs::copy_file(path("tiny.onnx"), odd, fs::copy_options::overwrite_existing);
  Outcome r = segmux_stderr("inspect '" + odd + "' --json");
  EXPECT_EQ(r.code, 0) << r.err;
  r = segmux_stderr("compile '" + odd + "' -o '" + odd_smx + "' --json");  // the command line goes into META
  EXPECT_EQ(r.code, 0) << r.err;
  r = segmux_stderr("run '" + odd_smx + "' --random --json --output " + path("o.safetensors"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
}
