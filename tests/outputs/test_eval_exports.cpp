// The evaluation and annotation exports of a run (eval_exports.h), from a tracks.json written by
// TrackWriter with hand-built objects: every field checked against the masks, scores and boxes put in.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/json_limits.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/outputs/eval_exports.h"
#include "pipeline/outputs/eval_inputs.h"
#include "pipeline/outputs/outputs.h"
#include "pipeline/outputs/tracks_json.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

constexpr int kW = 40, kH = 30;

BinaryMask rect(int x0, int y0, int x1, int y1) {
  BinaryMask m(kH, kW);
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) m.at(y, x) = 1;
  return m;
}

void add_object(FrameOutput& out, int64_t id, const std::string& prompt, float score, const BinaryMask& m) {
  out.obj_ids.push_back(id);
  out.prompts.push_back(prompt);
  out.probs.push_back(score);
  const auto [x0, y0, x1, y1] = visible_box(m);
  out.boxes_xywh.push_back(
      x1 < x0 ? std::array<float, 4>{0, 0, 0, 0}
              : std::array<float, 4>{float(x0) / kW, float(y0) / kH, float(x1 - x0 + 1) / kW, float(y1 - y0 + 1) / kH});
  out.masks.push_back(m);
}

// Three frames: object 0 ("dog") on every frame, scores 0.9, 0.5, 0.8; object 1 ("cat") on frames 0
// and 1 (score 0.7), then tracked but not visible (an empty mask, score -10000) on frame 2.
nlohmann::json write_run(const std::string& dir, const std::vector<ExportFormat>& formats) {
  fs::remove_all(dir);
  OutputOptions opt;
  opt.write_masks = false;
  opt.prompts = {"dog", "cat"};
  opt.formats = formats;
  opt.export_context = {.video_id = 7, .fps = 10, .review_count = 20, .media_name = "clip.mp4"};
  TrackWriter w(dir, kW, kH, opt);
  const float dog[] = {0.9f, 0.5f, 0.8f};
  for (int f = 0; f < 3; ++f) {
    FrameOutput out;
    out.frame_index = f;
    add_object(out, 0, "dog", dog[f], rect(2 + f, 3, 11 + f, 9));
    if (f < 2)
      add_object(out, 1, "cat", 0.7f, rect(20, 10, 29, 24));
    else
      add_object(out, 1, "cat", -10000.0f, BinaryMask(kH, kW));
    w.add(RgbImage{kW, kH, std::vector<uint8_t>(kW * kH * 3, 0)}, out, f / 10.0);
  }
  w.finish();
  return read_eval_json(dir + "/tracks.json");
}

BinaryMask decode(const nlohmann::json& rle) {
  return rle_decode(coco_rle_from_string(rle["counts"].get<std::string>(), rle["size"][0], rle["size"][1]));
}

// CVAT's RLE read back independently: runs over the box, row-major, from 0s.
BinaryMask decode_cvat(const std::string& runs, int left, int top, int width, int height) {
  BinaryMask m(kH, kW);
  std::stringstream ss(runs);
  int64_t pos = 0, value = 0;
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    const int64_t n = std::stoll(tok);
    for (int64_t i = 0; i < n; ++i, ++pos)
      if (value) m.at(top + int(pos / width), left + int(pos % width)) = 1;
    value ^= 1;
  }
  EXPECT_EQ(pos, int64_t(width) * height);
  return m;
}

std::string attr(const std::string& xml, size_t from, const std::string& name) {
  const size_t a = xml.find(name + "=\"", from) + name.size() + 2;
  return xml.substr(a, xml.find('"', a) - a);
}

}  // namespace

TEST(EvalExports, YtvisResultsAsTheOfficialWriter) {
  const std::string dir = ::testing::TempDir() + "/exports_ytvis";
  write_run(dir, {ExportFormat::ytvis});
  EXPECT_FALSE(fs::exists(dir + "/" + kReviewFramesFile));  // only with the annotation formats
  const nlohmann::json r = read_eval_json(dir + "/ytvis_results.json");
  ASSERT_EQ(r.size(), 2u);
  const nlohmann::json& dog = r[0];
  EXPECT_EQ(dog["video_id"], 7);
  EXPECT_EQ(dog["category_id"], 1);
  EXPECT_EQ(r[1]["category_id"], 2);
  EXPECT_NEAR(dog["score"].get<double>(), (0.9 + 0.5 + 0.8) / 3, 1e-4);  // mean over tracked frames
  for (int f = 0; f < 3; ++f) {
    EXPECT_EQ(decode(dog["segmentations"][f]).pixels, rect(2 + f, 3, 11 + f, 9).pixels);
    EXPECT_EQ(dog["areas"][f], 70);
    EXPECT_EQ(dog["bboxes"][f], nlohmann::json({2 + f, 3, 10, 7}));
  }
  // The cat is hidden on frame 2: not tracked there (null, zeros, -1e8), and its score leaves out -10000.
  const nlohmann::json& cat = r[1];
  EXPECT_TRUE(cat["segmentations"][2].is_null());
  EXPECT_EQ(cat["areas"][2], 0);
  EXPECT_EQ(cat["per_frame_scores"][2], -1e8);
  EXPECT_NEAR(cat["score"].get<double>(), 0.7, 1e-4);
  // And segmux eval reads it back: the same masks as tracks.json.
  const VideoScores s = evaluate_video(load_mask_video(dir + "/ytvis_results.json"), load_mask_video(dir), {});
  EXPECT_DOUBLE_EQ(s.jf, 1.0);
  ASSERT_TRUE(s.ap.has_value());  // scores and categories on both sides: mask AP applies
  EXPECT_DOUBLE_EQ(s.ap->ap, 1.0);
  EXPECT_EQ(s.ap->categories, 2);
}

TEST(EvalExports, CocoResultsPerVisibleObjectAndFrame) {
  const std::string dir = ::testing::TempDir() + "/exports_coco";
  write_run(dir, {ExportFormat::coco});
  const nlohmann::json r = read_eval_json(dir + "/coco_results.json");
  ASSERT_EQ(r.size(), 5u);  // 3 dog + 2 cat (hidden on frame 2)
  for (const auto& e : r) {
    const int frame = e["image_id"];
    if (e["category_id"] == 1) {
      EXPECT_EQ(decode(e["segmentation"]).pixels, rect(2 + frame, 3, 11 + frame, 9).pixels);
      EXPECT_DOUBLE_EQ(e["area"].get<double>(), 70.0 / (kW * kH));  // official: a fraction of the image
      EXPECT_EQ(e["bbox"], nlohmann::json({2 + frame, 3, 10, 7}));
    } else {
      EXPECT_LT(frame, 2);
      EXPECT_NEAR(e["score"].get<double>(), 0.7, 1e-4);
    }
  }
}

TEST(EvalExports, CvatMasksDecodeToTheObjects) {
  const std::string dir = ::testing::TempDir() + "/exports_cvat";
  write_run(dir, {ExportFormat::cvat});
  const std::string xml = segmux::read_untrusted_text_file(dir + "/cvat_annotations.xml", 1 << 20);
  EXPECT_NE(xml.find("<name>cat</name>"), std::string::npos);
  size_t at = 0;
  int masks = 0;
  while ((at = xml.find("<mask ", at)) != std::string::npos) {
    const size_t image = xml.rfind("<image ", at);
    const int frame = std::stoi(attr(xml, image, "id"));
    const std::string label = attr(xml, at, "label");
    const BinaryMask m =
        decode_cvat(attr(xml, at, "rle"), std::stoi(attr(xml, at, "left")), std::stoi(attr(xml, at, "top")),
                    std::stoi(attr(xml, at, "width")), std::stoi(attr(xml, at, "height")));
    EXPECT_EQ(m.pixels, (label == "dog" ? rect(2 + frame, 3, 11 + frame, 9) : rect(20, 10, 29, 24)).pixels) << frame;
    ++masks, ++at;
  }
  EXPECT_EQ(masks, 5);
  EXPECT_TRUE(fs::exists(dir + "/" + kReviewFramesFile));
}

TEST(EvalExports, LabelStudioTracksInPercent) {
  const std::string dir = ::testing::TempDir() + "/exports_ls";
  write_run(dir, {ExportFormat::labelstudio});
  const nlohmann::json t = read_eval_json(dir + "/labelstudio_tasks.json");
  EXPECT_EQ(t[0]["data"]["video"], "clip.mp4");
  const nlohmann::json& result = t[0]["predictions"][0]["result"];
  ASSERT_EQ(result.size(), 2u);
  const nlohmann::json& dog = result[0]["value"];
  EXPECT_EQ(dog["labels"], nlohmann::json({"dog"}));
  EXPECT_EQ(dog["framesCount"], 3);
  ASSERT_EQ(dog["sequence"].size(), 3u);
  EXPECT_EQ(dog["sequence"][1]["frame"], 2);  // 1-based
  EXPECT_NEAR(dog["sequence"][1]["x"].get<double>(), 100.0 * 3 / kW, 1e-3);
  EXPECT_NEAR(dog["sequence"][1]["width"].get<double>(), 100.0 * 10 / kW, 1e-3);
  EXPECT_NEAR(dog["sequence"][1]["time"].get<double>(), 0.1, 1e-9);
  // The cat leaves after frame 1: its last keyframe ends the interpolation.
  const nlohmann::json& cat = result[1]["value"]["sequence"];
  ASSERT_EQ(cat.size(), 2u);
  EXPECT_EQ(cat[0]["enabled"], true);
  EXPECT_EQ(cat[1]["enabled"], false);
}

TEST(EvalExports, ReviewFramesRankTheLeastSure) {
  const std::string dir = ::testing::TempDir() + "/exports_review";
  write_run(dir, {ExportFormat::cvat, ExportFormat::labelstudio});
  const nlohmann::json r = read_eval_json(dir + "/" + kReviewFramesFile);
  // Visible scores: dog 0.9, 0.5, 0.8; cat 0.7, 0.7 -> the lowest is the dog on frame 1.
  EXPECT_EQ(r["lowest_scores"][0], nlohmann::json({{"frame_index", 1}, {"obj_id", 0}, {"score", 0.5}}));
  ASSERT_EQ(r["largest_drops"].size(), 1u);  // only the dog's 0.9 -> 0.5 drops
  EXPECT_EQ(r["largest_drops"][0]["frame_index"], 1);
  EXPECT_NEAR(r["largest_drops"][0]["drop"].get<double>(), 0.4, 1e-4);
  ASSERT_EQ(r["lost"].size(), 1u);
  EXPECT_EQ(r["lost"][0], nlohmann::json({{"frame_index", 2}, {"last_seen_frame", 1}, {"obj_id", 1}}));
  EXPECT_EQ(r["frames"], nlohmann::json({0, 1, 2}));
}

TEST(EvalExports, RefusesUnknownFormatsAndFormatsWithoutJson) {
  EXPECT_THROW(parse_export_formats({"ytvis,mots"}), Error);
  EXPECT_EQ(parse_export_formats({"coco,ytvis", "coco"}).size(), 2u);
  OutputOptions opt;
  opt.write_json = false;
  opt.formats = {ExportFormat::coco};
  EXPECT_THROW(TrackWriter(::testing::TempDir() + "/exports_nojson", kW, kH, opt), Error);
}

TEST(EvalExports, CocoResultsOfImages) {
  EXPECT_EQ(coco_image_id("val2017/000000397133.jpg", 4), 397133);  // COCO's names are their ids
  EXPECT_EQ(coco_image_id("photos/dog.png", 4), 4);
  // A segment document: one object of 70 pixels on a 40 x 30 image.
  const BinaryMask m = rect(2, 3, 11, 9);
  const nlohmann::json doc = {{"width", kW},
                              {"height", kH},
                              {"objects",
                               {{{"id", 0},
                                 {"prompt", "cat"},
                                 {"score", 0.75},
                                 {"box_xywh", {2.0 / kW, 3.0 / kH, 10.0 / kW, 7.0 / kH}},
                                 {"mask_rle", mask_rle_json(m, RleForm::compressed)}}}}};
  const nlohmann::json r = coco_image_results({{doc, 397133}, {doc, 5}}, {"dog", "cat"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["image_id"], 397133);
  EXPECT_EQ(r[1]["image_id"], 5);
  EXPECT_EQ(r[0]["category_id"], 2);
  EXPECT_EQ(decode(r[0]["segmentation"]).pixels, m.pixels);
  EXPECT_DOUBLE_EQ(r[0]["area"].get<double>(), 70.0 / (kW * kH));
  EXPECT_EQ(r[0]["bbox"], nlohmann::json({2, 3, 10, 7}));
}
