// Issue 10's "done means" for the second engine: a package made by `segmux deploy` and moved runs under
// ONNX Runtime (`track --model PKG --engine ort`) with the same ids, scores and masks as our runtime, and
// `parity --video --model PKG --engine ort` passes the official trace. Skips where ONNX Runtime is not
// available (or the build has no `deploy` command).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/run_command.h"
#include "common/tracks_compare.h"
#include "engines/ort/ort_model.h"

namespace {

namespace fs = std::filesystem;
const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

int segmux_cmd(const std::string& args, std::string* out) {
  auto r = segmux::test::run_segmux(args);
  *out += r.out;
  return r.code;
}

}  // namespace

TEST(DeployOrt, MovedPackageTracksOnOnnxRuntimeLikeOurRuntime) {
  std::string why, out;
  if (!segmux::ort_available(&why)) GTEST_SKIP() << why;
  if (segmux_cmd("deploy --help", &out) != 0) GTEST_SKIP() << "this build has no `segmux deploy`";
  const fs::path root = fs::temp_directory_path() / ("segmux-deploy-ort-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "made");
  out.clear();
  ASSERT_EQ(segmux_cmd("deploy " + kFixture + "/weights.safetensors --config " + kFixture + "/config.json --vocab " +
                           kFixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz -o " + (root / "made/pkg").string() +
                           " --precision fp32 --target native --threads 2",
                       &out),
            0)
      << out;
  fs::rename(root / "made", root / "moved");
  const std::string pkg = (root / "moved/pkg").string();

  std::map<std::string, nlohmann::json> tracks;
  for (const std::string engine : {"smx", "ort"}) {
    out.clear();
    const std::string dir = (root / ("out-" + engine)).string();
    ASSERT_EQ(segmux_cmd("track " + kFixture + "/video/frames --prompt shape --model " + pkg + " --engine " + engine +
                             " --overlay none --no-masks -q -o " + dir,
                         &out),
              0)
        << engine << ": " << out;
    std::ifstream in(dir + "/tracks.json");
    tracks[engine] = nlohmann::json::parse(in, nullptr, false);
    ASSERT_TRUE(tracks[engine].contains("frames")) << engine;
  }
  const int objects = segmux::test::expect_tracks_match(tracks["smx"], tracks["ort"]);
  EXPECT_GT(objects, 0);

  out.clear();
  EXPECT_EQ(segmux_cmd("parity --video " + kFixture + " --model " + pkg + " --engine ort", &out), 0) << out;
  EXPECT_NE(out.find("video parity (engine ort)"), std::string::npos) << out;
  EXPECT_NE(out.find("-> PASS"), std::string::npos) << out;
  fs::remove_all(root);
}

// `track --model PKG --engine ort` checks the ONNX files it reads against the manifest before loading
// (size and sha256: ONNX files carry no checksums of their own) and names the damaged one.
TEST(DeployOrt, DamagedOnnxFilesAreRefusedByNameBeforeLoading) {
  std::string why, out;
  if (!segmux::ort_available(&why)) GTEST_SKIP() << why;
  const fs::path root = fs::temp_directory_path() / ("segmux-deploy-ort-damage-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path pkg = root / "pkg";
  ASSERT_EQ(segmux_cmd("deploy " + kFixture + "/weights.safetensors --config " + kFixture + "/config.json --vocab " +
                           kFixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz -o " + pkg.string() +
                           " --no-ort --in-process --threads 2",
                       &out),
            0)
      << out;
  const auto track = [&](const std::string& engine, std::string* log) {
    return segmux_cmd("track " + kFixture + "/video/frames --prompt shape --model " + pkg.string() + " --engine " +
                          engine + " --overlay none --no-masks -q -o " + (root / "out").string(),
                      log);
  };
  const fs::path onnx = pkg / "onnx/detector.onnx";
  const std::string original = [&] {
    std::ifstream in(onnx, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  {  // one byte changed, same size
    std::fstream f(onnx, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(original.size() / 2));
    f.put(char(original[original.size() / 2] ^ 0x5a));
  }
  out.clear();
  EXPECT_EQ(track("ort", &out), 1) << out;
  EXPECT_NE(out.find("'onnx/detector.onnx' does not match its sha256 in the manifest"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(root / "out"));
  out.clear();
  EXPECT_EQ(track("smx", &out), 0) << "the .smx engine does not read onnx/: " << out;
  fs::remove_all(root / "out");

  fs::resize_file(onnx, 100);
  out.clear();
  EXPECT_EQ(track("ort", &out), 1) << out;
  EXPECT_NE(out.find("'onnx/detector.onnx' has 100 bytes, the manifest says"), std::string::npos) << out;
  fs::remove(onnx);
  out.clear();
  EXPECT_EQ(track("ort", &out), 1) << out;
  EXPECT_NE(out.find("'onnx/detector.onnx' is missing"), std::string::npos) << out;
  fs::remove_all(root);
}
