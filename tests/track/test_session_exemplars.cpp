// The session API (VideoSession::add_prompt, what every front door calls) with box exemplars on
// the fixture model, on our runtime and on ONNX Runtime (exported ONNX): every case of
// tests/fixtures/sam31-tiny-prompts/video/exemplar_cases.json gives the official add_prompt ids, scores
// and masks on the prompted frame.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "deploy/model_store/model_store.h"
#include "pipeline/backends/ort_backend.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"
#include "pipeline/predictor/session_api.h"
#include "verify/sam31/fixture_config.h"

namespace fs = std::filesystem;
using namespace segmux;
using namespace segmux::pipeline;

namespace {

const std::string kTiny = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const fs::path kCases = fs::path(SEGMUX_SOURCE_DIR) / "tests/fixtures/sam31-tiny-prompts/video/exemplar_cases.json";

void run_cases(const std::string& engine) {
  const nlohmann::json cases = nlohmann::json::parse(std::ifstream(kCases));
  const fs::path root = fs::path(::testing::TempDir()) / ("segmux_session_ex_" + std::to_string(::getpid()));
  ModelSource src;
  src.weights = kTiny + "/weights.safetensors";
  src.config = kTiny + "/config.json";
  src.read_config = segmux::verify::load_fixture_config;
  src.vocab = kTiny + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  src.cache_dir = (root / "cache").string();
  src.engine = engine;
  OpenedModel model = open_model(src, [](const std::string&) {});
  const ControlConfig config = segmux::verify::load_fixture_control_config(kTiny + "/config.json");
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    const auto& q = c["request"];
    Prompt p;
    if (q.contains("text")) p.text = q["text"].get<std::string>();
    for (const auto& b : q["bounding_boxes"]) p.boxes_xywh.push_back({b[0], b[1], b[2], b[3]});
    for (const auto& l : q["bounding_box_labels"]) p.box_labels.push_back(l.get<int>());
    auto video = open_video(kTiny + "/video/frames");
    VideoSession session(*model.model, *video, config);  // a fresh session per case
    const FrameOutput out = session.add_prompt(q["frame_index"], p);
    const auto& ref = c["outputs"];
    const std::string what = engine + " " + c["name"].get<std::string>();
    ASSERT_EQ(out.obj_ids, ref["obj_ids"].get<std::vector<int64_t>>()) << what;
    for (size_t k = 0; k < out.obj_ids.size(); ++k) {
      EXPECT_NEAR(out.probs[k], ref["probs"][k].get<double>(), 1e-4) << what << " object " << k;
      const auto& m = ref["masks_rle"][k];
      const BinaryMask want = rle_decode(RleMask{m["size"][0], m["size"][1], m["counts"].get<std::vector<int64_t>>()});
      EXPECT_GE(mask_iou(out.masks[k], want), 0.98) << what << " object " << k;
    }
    if (!p.text) {
      for (const auto& prompt : out.prompts) EXPECT_EQ(prompt, "<text placeholder>") << what;
    }
    ++compared;
  }
  EXPECT_GE(compared, 5);
  fs::remove_all(root);
}

}  // namespace

TEST(SessionExemplars, AddPromptWithBoxesOnOurRuntime) {
  if (!fs::exists(kCases)) GTEST_SKIP() << "sam31-tiny-prompts fixtures not found";
  run_cases("smx");
}

TEST(SessionExemplars, AddPromptWithBoxesOnOnnxRuntime) {
  if (!fs::exists(kCases)) GTEST_SKIP() << "sam31-tiny-prompts fixtures not found";
  std::string why;
  if (!engine_available("ort", &why)) GTEST_SKIP() << why;
  run_cases("ort");
}
