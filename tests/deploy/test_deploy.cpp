// `segmux deploy` end to end on the fixture model, as a user runs it: deploy -> move the folder ->
// verify-package -> `track --model` gives exactly the outputs of `track --weights`, and
// `parity --video --model` passes the official trace; damaged packages are refused naming the file;
// a failed deploy leaves nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include "common/run_command.h"

namespace {

namespace fs = std::filesystem;
const std::string kFix = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

using Result = segmux::test::CommandResult;

Result segmux(const std::string& args) { return segmux::test::run_segmux(args); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class Deploy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(std::string(SEGMUX_BINARY_DIR) + "/segmux")) << "build the segmux target first";
    root_ = fs::temp_directory_path() / ("segmux-deploy-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "made");
    const Result r = segmux("deploy " + kFix + "/weights.safetensors --config " + kFix + "/config.json --vocab " +
                            kFix + "/tokenizer/bpe_simple_vocab_16e6.txt.gz -o " + (root_ / "made/pkg").string() +
                            " --precision fp32,bf16 --target native,generic --threads 2");
    deploy_ = r;
    // Moved elsewhere: nothing in it may point back to where it was made.
    fs::rename(root_ / "made", root_ / "elsewhere");
    pkg_ = root_ / "elsewhere" / "pkg";
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  // A copy of the package to damage.
  static fs::path copy(const std::string& name) {
    const fs::path p = root_ / name;
    fs::remove_all(p);
    fs::copy(pkg_, p, fs::copy_options::recursive);
    return p;
  }
  static inline fs::path root_, pkg_;
  static inline Result deploy_;
};

TEST_F(Deploy, WritesTheWholeLayoutWithRelativePaths) {
  ASSERT_EQ(deploy_.code, 0) << deploy_.out;
  for (const char* f :
       {"model.json", "backbone.smx", "memory_encoder_image_size.smx", "onnx/backbone.onnx", "onnx/backbone.slim.onnx",
        "contracts/backbone.json", "contracts/backbone.md", "tokenizer/bpe_simple_vocab_16e6.txt.gz", "inventory.md",
        "inventory.json", "verification.md", "verification.json", "report.md", "manifest.json",
        "compiled/bf16-generic/backbone.smx", "compiled/bf16-generic/model.json"})
    EXPECT_TRUE(fs::is_regular_file(pkg_ / f)) << f;
  const nlohmann::json model = nlohmann::json::parse(slurp(pkg_ / "model.json"));
  EXPECT_EQ(model["vocab"], "tokenizer/bpe_simple_vocab_16e6.txt.gz");
  const std::string made = (root_ / "made").string();
  for (const auto& e : fs::recursive_directory_iterator(pkg_))
    // report.md records the command exactly as typed; nothing else names a folder.
    if (e.path().filename() != "report.md" && e.path().extension() != ".onnx") {
      EXPECT_EQ(slurp(e.path()).find(made), std::string::npos) << e.path() << " names the folder it was made in";
    }
  const nlohmann::json m = nlohmann::json::parse(slurp(pkg_ / "manifest.json"));
  EXPECT_EQ(m["checkpoint"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(m["config"]["name"], "sam31-tiny");
  const nlohmann::json v = nlohmann::json::parse(slurp(pkg_ / "verification.json"));
  EXPECT_NE(v["verdict"], "fail");
  // Every compiled file ran through our runtime and (when available) ONNX Runtime.
  std::set<std::string> engines;
  for (const auto& row : v["rows"]) engines.insert(row["engine"].get<std::string>());
  EXPECT_TRUE(engines.count("segmux bf16 generic")) << v["rows"].size();
  const std::string report = slurp(pkg_ / "report.md");
  EXPECT_NE(report.find("atc --framework=5 --model=onnx/backbone.onnx"), std::string::npos);
  EXPECT_NE(report.find("trtexec --onnx=onnx/backbone.onnx --shapes="), std::string::npos);
  EXPECT_NE(report.find("NOT run here"), std::string::npos);
  // The .smx files record the command that made them, one that exists.
  EXPECT_NE(slurp(pkg_ / "detector.smx").find("segmux deploy "), std::string::npos);
  EXPECT_EQ(slurp(pkg_ / "detector.smx").find("compile-model"), std::string::npos);
}

TEST_F(Deploy, MovedPackageVerifiesAndTracksLikeTheWeights) {
  ASSERT_EQ(deploy_.code, 0) << deploy_.out;
  const Result v = segmux("verify-package " + pkg_.string() + " --threads 2");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("sizes and sha256 match"), std::string::npos) << v.out;

  const std::string video = kFix + "/video/frames";
  const Result a = segmux("track " + video + " --prompt shape --model " + pkg_.string() + " --out " +
                          (root_ / "out-pkg").string() + " --overlay none --quiet");
  ASSERT_EQ(a.code, 0) << a.out;
  const Result b = segmux("track " + video + " --prompt shape --weights " + kFix + "/weights.safetensors --config " +
                          kFix + "/config.json --cache-dir " + (root_ / "cache").string() + " --out " +
                          (root_ / "out-weights").string() + " --overlay none --quiet");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(slurp(root_ / "out-pkg/tracks.json"), slurp(root_ / "out-weights/tracks.json"));
  int pngs = 0;
  for (const auto& e : fs::directory_iterator(root_ / "out-pkg/masks")) {
    EXPECT_EQ(slurp(e.path()), slurp(root_ / "out-weights/masks" / e.path().filename())) << e.path();
    ++pngs;
  }
  EXPECT_GT(pngs, 0);
  const Result p = segmux("parity --video " + kFix + " --model " + pkg_.string());
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("-> PASS"), std::string::npos) << p.out;
}

TEST_F(Deploy, DamagedPackagesAreRefusedNamingTheFile) {
  ASSERT_EQ(deploy_.code, 0) << deploy_.out;
  const fs::path t = copy("tampered");
  {
    std::fstream f(t / "detector.smx", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(t / "detector.smx") / 2));
    f.put('\x5a');
  }
  Result r = segmux("verify-package " + t.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'detector.smx' does not match its sha256"), std::string::npos) << r.out;

  const fs::path tr = copy("truncated");
  fs::resize_file(tr / "backbone.smx", 1000);
  r = segmux("verify-package " + tr.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'backbone.smx' has 1000 bytes"), std::string::npos) << r.out;
  r = segmux("track " + kFix + "/video/frames --prompt shape --model " + tr.string() + " --out " +
             (root_ / "o").string() + " --quiet");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'backbone.smx' has 1000 bytes"), std::string::npos) << r.out;

  const fs::path mi = copy("missing");
  fs::remove(mi / "onnx/detector.onnx");
  r = segmux("verify-package " + mi.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'onnx/detector.onnx' is missing"), std::string::npos) << r.out;

  const fs::path li = copy("linked");
  fs::remove(li / "tokenizer/bpe_simple_vocab_16e6.txt.gz");
  fs::create_symlink(kFix + "/tokenizer/bpe_simple_vocab_16e6.txt.gz", li / "tokenizer/bpe_simple_vocab_16e6.txt.gz");
  r = segmux("verify-package " + li.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'tokenizer/bpe_simple_vocab_16e6.txt.gz' is a symbolic link"), std::string::npos) << r.out;
}

TEST_F(Deploy, FailuresLeaveNothingAndExistingFoldersAreKept) {
  const fs::path out = root_ / "fail" / "pkg";
  fs::create_directories(out.parent_path());
  // A config that does not match the weights: fails while building.
  std::ofstream(root_ / "fail" / "bad.json") << R"({"name": "wrong", "vit_dim": 96})";
  Result r = segmux("deploy " + kFix + "/weights.safetensors --config " + (root_ / "fail/bad.json").string() +
                    " --vocab " + kFix + "/tokenizer/bpe_simple_vocab_16e6.txt.gz -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("segmux: error: "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".partial-"), std::string::npos) << e.path();
  // An existing folder is never replaced without --force.
  fs::create_directories(out);
  r = segmux("deploy " + kFix + "/weights.safetensors -o " + out.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  r = segmux("deploy " + kFix + "/weights.safetensors -o " + (root_ / "x").string() + " --precision fp8");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown precision 'fp8'"), std::string::npos) << r.out;
}

}  // namespace
