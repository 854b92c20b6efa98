// `segmux track --model DIR --engine ort` on a model folder with its onnx/ files (the ONNX Runtime
// engine's cache entry made from the fixture's weights, laid out as a package): the same ids, scores and masks as
// --engine smx.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_command.h"
#include "common/tracks_compare.h"
#include "deploy/model_store/model_store.h"
#include "pipeline/backends/ort_backend.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

int segmux_cmd(const std::string& args, std::string* out) {
  auto r = segmux::test::run_segmux(args);
  *out += r.out;
  return r.code;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

}  // namespace

TEST(TrackEngines, OrtOnAModelFolderMatchesSmx) {
  std::string why;
  if (!engine_available("ort", &why)) GTEST_SKIP() << why;
  const std::string fixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  const fs::path root = fs::path(::testing::TempDir()) / ("segmux_track_engines_" + std::to_string(::getpid()));
  ModelSource src;
  src.weights = fixture + "/weights.safetensors";
  src.config = fixture + "/config.json";
  src.read_config = segmux::verify::load_fixture_config;
  src.vocab = fixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  src.cache_dir = (root / "cache").string();
  // Two cache entries of the same checkpoint: the .smx files, and (for ONNX Runtime) onnx/.
  const std::string smx_dir = open_model(src, [](const std::string&) {}).model_dir;
  src.engine = "ort";
  const std::string ort_dir = open_model(src, [](const std::string&) {}).model_dir;
  ASSERT_TRUE(fs::exists(ort_dir + "/onnx/propagation_decoder.onnx"));

  std::map<std::string, nlohmann::json> tracks;
  for (const std::string engine : {"smx", "ort"}) {
    const std::string out = (root / engine).string();
    std::string log;
    ASSERT_EQ(segmux_cmd("track " + fixture + "/video/frames --prompt shape --model " +
                             (engine == "smx" ? smx_dir : ort_dir) + " --vocab " + src.vocab + " --engine " + engine +
                             " --overlay none --no-masks -q -o " + out,
                         &log),
              0)
        << log;
    tracks[engine] = read_json(out + "/tracks.json");
    ASSERT_TRUE(tracks[engine].contains("frames")) << engine;
  }
  const int objects = segmux::test::expect_tracks_match(tracks["smx"], tracks["ort"]);
  EXPECT_GT(objects, 0);
  fs::remove_all(root);
}
