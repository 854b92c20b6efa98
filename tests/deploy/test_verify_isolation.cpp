// The package verification runs each compiled file in a child process (segmux re-executing itself,
// so a full-size run's peak memory is one file's: docs/deploy-fullsize.md). Its results are exactly
// those of the in-process path; a child that crashes, is killed or fails is reported for its file
// while the other files are still verified; a deploy whose verification child fails writes nothing.
// Faults are injected with SEGMUX_TEST_VERIFY_CHILD_FAULT (verify/package_verify.h).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/run_command.h"
#include "verify/package_verify.h"

namespace {

namespace fs = std::filesystem;
const std::string kFix = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::string kSegmux = std::string(SEGMUX_BINARY_DIR) + "/segmux";

int run(const std::string& cmd, std::string* out) {
  auto r = segmux::test::run_shell(cmd + " 2>&1");
  *out += r.out;
  return r.code;
}

std::string deploy_args(const fs::path& out) {
  return "deploy " + kFix + "/weights.safetensors --config " + kFix + "/config.json --vocab " + kFix +
         "/tokenizer/bpe_simple_vocab_16e6.txt.gz -o " + out.string() + " --threads 2";
}

class VerifyIsolation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("segmux-verify-iso-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    pkg_ = root_ / "pkg";
    code_ = run(kSegmux + " " + deploy_args(pkg_), &out_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  static inline fs::path root_, pkg_;
  static inline int code_ = -1;
  static inline std::string out_;
};

TEST_F(VerifyIsolation, ChildProcessesGiveExactlyTheInProcessResults) {
  ASSERT_EQ(code_, 0) << out_;
  segmux::verify::PackageVerifyOptions in;
  in.num_threads = 2;
  const segmux::verify::PackageVerification a = segmux::verify::verify_package_models(pkg_.string(), in, nullptr);
  segmux::verify::PackageVerifyOptions child = in;
  child.child_exe = kSegmux;
  const segmux::verify::PackageVerification b = segmux::verify::verify_package_models(pkg_.string(), child, nullptr);
  ASSERT_GT(a.rows.size(), 20u);
  EXPECT_TRUE(a.errors.empty()) << a.errors.front();
  EXPECT_EQ(a.to_wire().dump(), b.to_wire().dump());  // every field, bit for bit
  EXPECT_EQ(a.to_markdown(), b.to_markdown());
  // deploy verified in child processes (the default): its verification.json is the same too.
  std::ifstream f(pkg_ / "verification.json");
  EXPECT_EQ(nlohmann::json::parse(f), a.to_json());
}

TEST_F(VerifyIsolation, AFailingChildIsReportedForItsFileAndTheOthersStillRun) {
  ASSERT_EQ(code_, 0) << out_;
  const std::pair<const char*, const char*> faults[] = {
      {"detector:crash", "detector: verification in a child process failed: its process died of signal 11"},
      {"backbone:kill",
       "backbone: verification in a child process failed: its process was killed by SIGKILL (most "
       "likely out of memory)"},
      {"text_encoder:exit", "text_encoder: verification in a child process failed: its process exited with status 3"},
      {"memory_encoder:fail", "memory_encoder: verification in a child process failed: injected failure"}};
  for (const auto& [fault, message] : faults) {
    std::string out;
    EXPECT_EQ(run("SEGMUX_TEST_VERIFY_CHILD_FAULT=" + std::string(fault) + " " + kSegmux + " verify-package " +
                      pkg_.string() + " --threads 2",
                  &out),
              1)
        << fault << ": " << out;
    EXPECT_NE(out.find(message), std::string::npos) << fault << ": " << out;
    EXPECT_NE(out.find("verification: fail"), std::string::npos) << out;
    EXPECT_NE(out.find("| propagation_decoder | segmux fp32"), std::string::npos) << "others not verified: " << out;
  }
  // The in-process path never spawns children: the injected fault has nothing to act on.
  std::string out;
  EXPECT_EQ(run("SEGMUX_TEST_VERIFY_CHILD_FAULT=detector:crash " + kSegmux + " verify-package " + pkg_.string() +
                    " --in-process --threads 2",
                &out),
            0)
      << out;
}

TEST_F(VerifyIsolation, DeployWhoseVerificationChildDiesWritesNothing) {
  const fs::path out_dir = root_ / "failed" / "pkg";
  fs::create_directories(out_dir.parent_path());
  std::string out;
  EXPECT_EQ(
      run("SEGMUX_TEST_VERIFY_CHILD_FAULT=interactive_decoder:crash " + kSegmux + " " + deploy_args(out_dir), &out), 1)
      << out;
  EXPECT_NE(out.find("interactive_decoder: verification in a child process failed: its process died of signal 11"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("no package written"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(out_dir));
  for (const auto& e : fs::directory_iterator(out_dir.parent_path())) ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(VerifyIsolation, APackageNamedLikeAnOptionIsVerifiedInItsChildren) {
  // Issue 22: the children got the folder as their first argument, where "-pkg" read as an option.
  ASSERT_EQ(code_, 0) << out_;
  const fs::path odd = root_ / "-pkg";
  fs::copy(pkg_, odd, fs::copy_options::recursive);
  std::string out;
  EXPECT_EQ(run("cd " + root_.string() + " && " + kSegmux + " verify-package --threads 2 -- -pkg", &out), 0) << out;
  EXPECT_EQ(out.find("child process failed"), std::string::npos) << out;
  EXPECT_NE(out.find("| propagation_decoder | segmux fp32"), std::string::npos) << out;
  fs::remove_all(odd);
}

}  // namespace
