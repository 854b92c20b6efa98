// The segmux commands, run as the built binary (SEGMUX_BINARY_DIR/segmux) on a small model.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "common/random_tensor.h"
#include "common/run_command.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "ir/builder.h"
#include "onnx/onnx_io.h"
#include "runtime/interpreter.h"

using namespace segmux;

namespace {

using Result = test::CommandResult;

// Runs `segmux ARGS` and returns its exit code and stdout (stderr goes to stdout too).
Result segmux_cmd(const std::string& args) { return test::run_segmux(args); }

using test::random_tensor;

class Commands : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("segmux_apps_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ir::Graph g;
    g.name = "tiny";
    ir::GraphBuilder b(g);
    int x = b.input("x", DType::f32, {2, 8});
    int h = b.op1("MatMul", {x, b.constant(random_tensor({8, 8}, 1), "w")});
    h = b.op1("Relu", {b.op1("Add", {h, b.constant(random_tensor({8}, 2), "bias")})});
    b.output(b.op1("Identity", {h}), "y");
    b.output(b.op1("Sigmoid", {x}), "gate");
    graph_ = g;
    onnx_io::export_onnx_file(g, path("tiny.onnx"));
    input_ = random_tensor({2, 8}, 3);
    write_npy(path("x.npy"), input_);
    write_safetensors(path("x.safetensors"), {{"some_other_name", input_}});
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }

  static std::filesystem::path dir_;
  static ir::Graph graph_;
  static Tensor input_;
};
std::filesystem::path Commands::dir_;
ir::Graph Commands::graph_;
Tensor Commands::input_;

}  // namespace

TEST_F(Commands, BinaryExists) {
  ASSERT_TRUE(std::filesystem::exists(std::string(SEGMUX_BINARY_DIR) + "/segmux")) << "build the segmux target first";
}

TEST_F(Commands, EveryCommandHasHelp) {
  for (const char* c : {"inspect", "check", "compile", "run", "verify", "bench"}) {
    Result r = segmux_cmd(std::string(c) + " --help");
    EXPECT_EQ(r.code, 0) << c << ": " << r.out;
    EXPECT_NE(r.out.find("segmux " + std::string(c)), std::string::npos) << r.out;
  }
}

TEST_F(Commands, CompileRunVerify) {
  Result c = segmux_cmd("compile " + path("tiny.onnx") + " -o " + path("tiny.smx") + " --json");
  ASSERT_EQ(c.code, 0) << c.out;
  auto j = nlohmann::json::parse(c.out);
  EXPECT_GT(j["sum_tensor_bytes"].get<size_t>(), 0u);
  EXPECT_LE(j["arena_bytes"].get<size_t>(), j["sum_tensor_bytes"].get<size_t>());

  Result r1 =
      segmux_cmd("run " + path("tiny.smx") + " --input x=" + path("x.npy") + " --output " + path("a.safetensors"));
  ASSERT_EQ(r1.code, 0) << r1.out;
  Result r2 = segmux_cmd("run " + path("tiny.onnx") + " --input x=" + path("x.safetensors") + " --output " +
                         path("b.safetensors"));
  ASSERT_EQ(r2.code, 0) << r2.out;
  // Options may come before the model; each --input takes exactly one NAME=FILE.
  Result r3 =
      segmux_cmd("run --input x=" + path("x.npy") + " " + path("tiny.smx") + " --output " + path("c.safetensors"));
  ASSERT_EQ(r3.code, 0) << r3.out;
  TensorFile a = read_safetensors(path("a.safetensors"));
  EXPECT_EQ(a.names, (std::vector<std::string>{"y", "gate"}));
  Interpreter s(graph_, InterpreterOptions{1, false});
  auto expected = s.run({{"x", input_}});
  for (auto& [name, t] : expected)
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(a.at(name).get_as_double(i), t.get_as_double(i), 1e-5);

  Result v = segmux_cmd("verify " + path("a.safetensors") + " " + path("b.safetensors") + " --json");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(nlohmann::json::parse(v.out)["verdict"], "pass");

  // A clearly different tensor fails (exit 2); a small drift is a review (exit 1); no file: exit 3.
  Tensor y = a.at("y").clone(), gate = a.at("gate").clone();
  y.data<float>()[0] += 0.5f;
  write_safetensors(path("bad.safetensors"), {{"y", y}, {"gate", gate}});
  EXPECT_EQ(segmux_cmd("verify " + path("bad.safetensors") + " " + path("b.safetensors")).code, 2);
  y = a.at("y").clone();
  y.data<float>()[0] += 5e-4f;
  write_safetensors(path("drift.safetensors"), {{"y", y}, {"gate", gate}});
  EXPECT_EQ(segmux_cmd("verify " + path("drift.safetensors") + " " + path("b.safetensors")).code, 1);
  write_safetensors(path("partial.safetensors"), {{"y", a.at("y")}});
  EXPECT_EQ(segmux_cmd("verify " + path("partial.safetensors") + " " + path("b.safetensors")).code, 2);
  EXPECT_EQ(segmux_cmd("verify " + path("missing.safetensors") + " " + path("b.safetensors")).code, 3);
}

TEST_F(Commands, RandomInputsAndBadInputs) {
  Result r = segmux_cmd("run " + path("tiny.onnx") + " --random --output " + path("r.safetensors") + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["outputs"].size(), 2u);
  Result missing = segmux_cmd("run " + path("tiny.onnx") + " --output " + path("r2.safetensors"));
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.out.find("missing input 'x'"), std::string::npos) << missing.out;
  Result bad = segmux_cmd("run " + path("tiny.onnx") + " --input x=" + path("nothing.npy") + " --output " +
                          path("r3.safetensors"));
  EXPECT_NE(bad.code, 0);
}

TEST_F(Commands, CorruptCompiledModelIsAClearError) {
  ASSERT_EQ(segmux_cmd("compile " + path("tiny.onnx") + " -o " + path("c.smx")).code, 0);
  std::string bytes;
  {
    FILE* f = std::fopen(path("c.smx").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  }
  bytes[bytes.size() - 3] ^= 1;  // inside the last weight
  write_file_atomic(path("c.smx"), bytes.data(), bytes.size());
  Result r = segmux_cmd("run " + path("c.smx") + " --random --output " + path("c.safetensors"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;
}

TEST_F(Commands, InspectCheckBench) {
  Result i = segmux_cmd("inspect " + path("tiny.onnx") + " --json");
  ASSERT_EQ(i.code, 0) << i.out;
  auto j = nlohmann::json::parse(i.out);
  EXPECT_EQ(j["op_histogram"]["MatMul"], 1);
  EXPECT_EQ(j["parameters"], 8 * 8 + 8);
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), 2.0 * 2 * 8 * 8);
  EXPECT_TRUE(j["unsupported_ops"].empty());

  ASSERT_EQ(segmux_cmd("compile " + path("tiny.onnx") + " -o " + path("i.smx")).code, 0);
  Result is = segmux_cmd("inspect " + path("i.smx") + " --json");
  ASSERT_EQ(is.code, 0) << is.out;
  EXPECT_EQ(nlohmann::json::parse(is.out)["format"], "smx");

  Result c = segmux_cmd("check " + path("tiny.onnx") + " --json");
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_TRUE(nlohmann::json::parse(c.out)["ok"].get<bool>());
  Result cs = segmux_cmd("check " + path("i.smx"));
  EXPECT_EQ(cs.code, 0) << cs.out;

  Result b = segmux_cmd("bench " + path("i.smx") + " --warmup 0 --iters 2 --json");
  ASSERT_EQ(b.code, 0) << b.out;
  auto bj = nlohmann::json::parse(b.out);
  EXPECT_GT(bj["segmux"]["median_ms"].get<double>(), 0);
  EXPECT_GT(bj["peak_rss_bytes"].get<size_t>(), 0u);
}
