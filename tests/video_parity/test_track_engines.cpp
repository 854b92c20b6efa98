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

#include "pipeline/backends/ort_backend.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/model_store/model_store.h"
#include "verify/video_parity.h"
#include "common/run_command.h"

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
  const auto& a = tracks["smx"]["frames"];
  const auto& b = tracks["ort"]["frames"];
  ASSERT_EQ(a.size(), b.size());
  int objects = 0;
  for (size_t f = 0; f < a.size(); ++f) {
    ASSERT_EQ(a[f]["objects"].size(), b[f]["objects"].size()) << "frame " << f;
    for (size_t k = 0; k < a[f]["objects"].size(); ++k) {
      const auto &x = a[f]["objects"][k], &y = b[f]["objects"][k];
      ASSERT_TRUE(x.contains("mask_rle") && !x["mask_rle"].is_null()) << x.dump();
      EXPECT_EQ(x["id"], y["id"]) << "frame " << f;
      EXPECT_NEAR(x["score"].get<double>(), y["score"].get<double>(), 1e-3) << "frame " << f;  // parity's bar
      // Two engines' float rounding differs, and a tracker carries a flipped boundary pixel on: the
      // masks are held to video parity's bar, as each engine is against the official outputs.
      auto mask = [](const nlohmann::json& rle) {
        const int h = rle["size"][0].get<int>(), w = rle["size"][1].get<int>();
        return rle_decode(segmux::pipeline::coco_rle_from_string(rle["counts"].get<std::string>(), h, w));
      };
      long long diff = 0;
      EXPECT_TRUE(mask_within_parity_bar(mask(x["mask_rle"]), mask(y["mask_rle"]), &diff))
          << "frame " << f << " object " << x["id"] << ": " << diff << " px differ";
      ++objects;
    }
  }
  EXPECT_GT(objects, 0);
  fs::remove_all(root);
}
