#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/outputs.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

// The official trace's masks are COCO RLE; decoding and re-encoding each must give the same counts,
// and the official box (from the same mask) must match ours.
TEST(Outputs, CocoRleMatchesTheOfficialTrace) {
  std::ifstream in(std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video/trace.json");
  ASSERT_TRUE(in.good());
  nlohmann::json trace = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& frame : trace["outputs"]) {
    for (size_t k = 0; k < frame["masks_rle"].size(); ++k) {
      const auto& rle = frame["masks_rle"][k];
      int h = rle["size"][0], w = rle["size"][1];
      auto counts = rle["counts"].get<std::vector<uint32_t>>();
      auto mask = coco_rle_to_mask(counts, h, w);
      EXPECT_EQ(mask_to_coco_rle(mask, h, w), counts);
      // The official boxes come from the masks before the object-wise non-overlap step, which only
      // removes pixels: the box of the emitted mask lies inside the official box.
      if (std::count(mask.begin(), mask.end(), 1) == 0) continue;
      auto box = mask_box_xywh(mask, h, w);
      auto ref = frame["boxes_xywh"][k].get<std::vector<float>>();
      const float eps = 1e-6f;
      EXPECT_GE(box[0] + eps, ref[0]);
      EXPECT_GE(box[1] + eps, ref[1]);
      EXPECT_LE(box[0] + box[2], ref[0] + ref[2] + eps);
      EXPECT_LE(box[1] + box[3], ref[1] + ref[3] + eps);
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(Outputs, RleRejectsRunsThatDoNotCoverTheMask) {
  EXPECT_THROW(coco_rle_to_mask({3, 5}, 2, 2), Error);
  EXPECT_THROW(coco_rle_to_mask({1, 1}, 2, 2), Error);
}

TEST(Outputs, WriterProducesMasksJsonAndOverlay) {
  std::string dir = ::testing::TempDir() + "/track_out";
  fs::remove_all(dir);
  OutputOptions opt;
  opt.overlay_path = dir + "/overlay.gif";
  opt.prompt = "dog";
  TrackWriter w(dir, 8, 6, opt);
  RgbImage frame;
  frame.width = 8;
  frame.height = 6;
  frame.pixels.assign(8 * 6 * 3, 100);
  FrameOutput out;
  out.frame_index = 0;
  out.width = 8;
  out.height = 6;
  ObjectOutput o;
  o.id = 3;
  o.score = 0.9f;
  o.mask.assign(48, 0);
  o.mask[2 * 8 + 3] = 1;
  o.box_xywh = mask_box_xywh(o.mask, 6, 8);
  out.objects.push_back(o);
  w.add(frame, out);
  EXPECT_FALSE(fs::exists(dir + "/tracks.json"));  // only after finish()
  w.finish();
  EXPECT_TRUE(fs::exists(dir + "/masks/00000.png"));
  EXPECT_TRUE(fs::exists(dir + "/overlay.gif"));
  std::ifstream in(dir + "/tracks.json");
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["prompt"], "dog");
  ASSERT_EQ(j["frames"].size(), 1u);
  EXPECT_EQ(j["frames"][0]["objects"][0]["id"], 3);
  auto back = coco_rle_to_mask(j["frames"][0]["objects"][0]["mask_rle"]["counts"].get<std::vector<uint32_t>>(), 6, 8);
  EXPECT_EQ(back, o.mask);
}

TEST(Outputs, OverlayColoursTheMask) {
  RgbImage frame;
  frame.width = 4;
  frame.height = 4;
  frame.pixels.assign(48, 0);
  FrameOutput out;
  out.width = out.height = 4;
  ObjectOutput o;
  o.id = 1;
  o.mask.assign(16, 0);
  o.mask[5] = 1;
  out.objects.push_back(o);
  RgbImage img = draw_overlay(frame, out);
  EXPECT_NE(img.pixels[15] + img.pixels[16] + img.pixels[17], 0);
  EXPECT_EQ(img.pixels[0] + img.pixels[1] + img.pixels[2], 0);
}
