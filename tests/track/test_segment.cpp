// `segmux segment` (the official image processor) against the golden outputs of Meta's Sam3Processor on
// the tiny fixture model (tests/fixtures/sam31-tiny-image, text-prompt cases): same kept queries in
// the same order, scores and pixel boxes within the detector tolerance, masks by IoU; and its errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/rle_json.h"
#include "common/run_command.h"

namespace fs = std::filesystem;

namespace {

using segmux::test::mask_of;
using segmux::test::read_text;

// `segmux ARGS` (stdout dropped); stderr through a scratch file in `tmp`.
segmux::test::SplitResult run_segmux(const std::string& args, const fs::path& tmp) {
  return segmux::test::run_segmux_split(args + " >/dev/null", (tmp / "stderr.txt").string());
}

const std::string kSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-image";

class Segment : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSet + "/image/cases.json") || !fs::exists(kSet + "/weights.safetensors"))
      GTEST_SKIP() << "image fixtures not found";
    tmp_ = fs::path(::testing::TempDir()) / ("segmux_segment_" + std::to_string(::getpid()));
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  std::string model() const {
    return "--weights " + kSet + "/weights.safetensors --config " + kSet + "/config.json --vocab " + kSet +
           "/tokenizer/bpe_simple_vocab_16e6.txt.gz --cache-dir " + (tmp_ / "cache").string() + " -q";
  }
  fs::path tmp_;
};

}  // namespace

TEST_F(Segment, TextCasesEqualTheOfficialImageProcessor) {
  nlohmann::json cases = nlohmann::json::parse(read_text(kSet + "/image/cases.json"));
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    if (c["steps"].size() != 1 || c["steps"][0]["kind"] != "text") continue;  // box prompts: the next test
    const std::string name = c["name"], text = c["text_used"];
    const fs::path out = tmp_ / name;
    auto r = run_segmux("segment " + kSet + "/" + c["image"].get<std::string>() + " --prompt " + text + " --out " +
                            out.string() + " " + model(),
                        tmp_);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    const std::string stem = fs::path(c["image"].get<std::string>()).stem().string();
    nlohmann::json got = nlohmann::json::parse(read_text(out / (stem + ".json")));
    const auto& ref = c["outputs"];
    ASSERT_EQ(got["objects"].size(), ref["query_indices"].size()) << name << ": kept queries differ";
    for (size_t k = 0; k < ref["query_indices"].size(); ++k) {
      const auto& o = got["objects"][k];
      EXPECT_EQ(o["id"], int64_t(k));
      EXPECT_EQ(o["prompt"], text);
      const double score = o["score"], ref_score = ref["scores"][k];
      // Detector tolerance (~1e-4; measured 1.1e-6); a few resized pixels differ by one level from
      // torch's (tests/preprocess), which moves a few mask pixels (IoU measured >= 0.9995).
      EXPECT_NEAR(score, ref_score, 1e-4) << name << " object " << k;
      for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(o["box_xyxy_px"][i].get<double>(), ref["boxes_xyxy_px"][k][i].get<double>(), 0.05)
            << name << " object " << k << " box";
      const double m = segmux::test::mask_iou(mask_of(o["mask_rle"]), mask_of(ref["masks_rle"][k]));
      EXPECT_GE(m, 0.995) << name << " object " << k << " mask IoU";
      EXPECT_EQ(o["area"].get<int64_t>(), mask_of(o["mask_rle"]).area());
    }
    EXPECT_TRUE(fs::exists(out / (stem + ".png")));
    EXPECT_TRUE(fs::exists(out / (stem + ".overlay.png")));
    ++compared;
  }
  EXPECT_GE(compared, 3) << "the fixture's text-only cases";
}

// Box exemplars (official add_geometric_prompt after set_text_prompt, or boxes alone with the text
// "visual"): the fixture's box cases through `segment --box`.
TEST_F(Segment, BoxCasesEqualTheOfficialImageProcessor) {
  nlohmann::json cases = nlohmann::json::parse(read_text(kSet + "/image/cases.json"));
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    std::string args;
    bool has_box = false;
    for (const auto& step : c["steps"]) {
      if (step["kind"] == "text") args += " --prompt " + step["text"].get<std::string>();
      if (step["kind"] != "box") continue;
      has_box = true;
      const auto& b = step["box_xywh_px"];
      args += " --box " + std::to_string(b[0].get<int>()) + "," + std::to_string(b[1].get<int>()) + "," +
              std::to_string(b[2].get<int>()) + "," + std::to_string(b[3].get<int>()) +
              (step["label"].get<bool>() ? "" : ":neg");
    }
    if (!has_box) continue;
    const std::string name = c["name"];
    const fs::path out = tmp_ / name;
    auto r = run_segmux(
        "segment " + kSet + "/" + c["image"].get<std::string>() + args + " --out " + out.string() + " " + model(),
        tmp_);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    const std::string stem = fs::path(c["image"].get<std::string>()).stem().string();
    nlohmann::json got = nlohmann::json::parse(read_text(out / (stem + ".json")));
    const auto& ref = c["outputs"];
    ASSERT_EQ(got["objects"].size(), ref["query_indices"].size()) << name << ": kept queries differ";
    for (size_t k = 0; k < ref["query_indices"].size(); ++k) {
      const auto& o = got["objects"][k];
      EXPECT_EQ(o["prompt"], c["text_used"]) << name;
      EXPECT_NEAR(o["score"].get<double>(), ref["scores"][k].get<double>(), 1e-4) << name << " object " << k;
      for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(o["box_xyxy_px"][i].get<double>(), ref["boxes_xyxy_px"][k][i].get<double>(), 0.05)
            << name << " object " << k << " box";
      EXPECT_GE(segmux::test::mask_iou(mask_of(o["mask_rle"]), mask_of(ref["masks_rle"][k])), 0.995)
          << name << " object " << k;
    }
    ++compared;
  }
  EXPECT_GE(compared, 5) << "the fixture's box cases";
}

TEST_F(Segment, BadInputLeavesNothing) {
  const fs::path out = tmp_ / "bad";
  auto r = run_segmux(
      "segment " + kSet + "/images/frame00.png --prompt shape --box 10,10,0,5 --out " + out.string() + " " + model(),
      tmp_);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  r = run_segmux(
      "segment " + kSet + "/images/frame00.png --prompt shape --box 300,10,40,20 --out " + out.string() + " " + model(),
      tmp_);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("not inside the 320x240 frame"), std::string::npos) << r.err;
  r = run_segmux("segment " + kSet + "/images/frame00.png --out " + out.string() + " " + model(), tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no prompt"), std::string::npos) << r.err;
  r = run_segmux("segment " + kSet + "/images/missing.png --prompt shape --out " + out.string() + " " + model(), tmp_);
  EXPECT_EQ(r.code, 1);
  r = run_segmux(
      "segment " + kSet + "/images/frame00.png --prompt shape --threshold 1.5 --out " + out.string() + " " + model(),
      tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(out));
}
