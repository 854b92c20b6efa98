#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../common/write_limit.h"
#include "core/error.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/outputs/outputs.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

static RgbImage flat_frame(int w, int h, uint8_t v) {
  RgbImage f;
  f.width = w;
  f.height = h;
  f.pixels.assign(size_t(w) * size_t(h) * 3, v);
  return f;
}

static FrameOutput one_object(int w, int h, int64_t id, int x, int y) {
  FrameOutput out;
  out.frame_index = 0;
  BinaryMask m(h, w);
  m.at(y, x) = 1;
  out.obj_ids.push_back(id);
  out.probs.push_back(0.9f);
  out.boxes_xywh.push_back({float(x) / float(w), float(y) / float(h), 0, 0});
  out.masks.push_back(m);
  return out;
}

TEST(Outputs, WriterProducesMasksJsonAndOverlayOnlyAtFinish) {
  std::string dir = ::testing::TempDir() + "/track_out";
  fs::remove_all(dir);
  OutputOptions opt;
  opt.overlay_path = dir + "/overlay.gif";
  opt.prompt = "dog";
  {
    TrackWriter w(dir, 8, 6, opt);
    FrameOutput out = one_object(8, 6, 3, 3, 2);
    w.add(flat_frame(8, 6, 100), out);
    EXPECT_FALSE(fs::exists(dir + "/tracks.json"));  // only after finish()
    w.finish();
  }
  EXPECT_TRUE(fs::exists(dir + "/masks/00000.png"));
  EXPECT_TRUE(fs::exists(dir + "/overlay.gif"));
  std::ifstream in(dir + "/tracks.json");
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["prompt"], "dog");
  ASSERT_EQ(j["frames"].size(), 1u);
  EXPECT_EQ(j["frames"][0]["objects"][0]["id"], 3);
  EXPECT_EQ(j["frames"][0]["objects"][0]["area"], 1);
  EXPECT_EQ(j["format"], "segmux-tracks-2");
  const auto& rle = j["frames"][0]["objects"][0]["mask_rle"];
  EXPECT_EQ(rle["size"], nlohmann::json({6, 8}));
  EXPECT_EQ(rle_decode(coco_rle_from_string(rle["counts"], 6, 8)).at(2, 3), 1);
}

TEST(Outputs, AbandonedWriterLeavesNoJson) {
  std::string dir = ::testing::TempDir() + "/track_abandoned";
  fs::remove_all(dir);
  {
    TrackWriter w(dir, 8, 6, OutputOptions{});
    w.add(flat_frame(8, 6, 0), one_object(8, 6, 1, 0, 0));
  }
  EXPECT_FALSE(fs::exists(dir + "/tracks.json"));
  for (auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos);
}

TEST(Outputs, RejectsMasksOfTheWrongSize) {
  std::string dir = ::testing::TempDir() + "/track_bad";
  TrackWriter w(dir, 8, 6, OutputOptions{});
  EXPECT_THROW(w.add(flat_frame(8, 6, 0), one_object(5, 5, 1, 0, 0)), Error);
}

TEST(Outputs, OverlayColoursOnlyTheMaskItsBoxAndLabel) {
  FrameOutput out = one_object(64, 64, 1, 40, 40);
  RgbImage img = draw_overlay(flat_frame(64, 64, 0), out);
  const uint8_t* inside = pixel_at(img, 40, 40);
  EXPECT_NE(inside[0] + inside[1] + inside[2], 0);
  const uint8_t* outside = pixel_at(img, 10, 50);  // neither mask, box nor label (above the box)
  EXPECT_EQ(outside[0] + outside[1] + outside[2], 0);
  EXPECT_NE(id_color(1), id_color(2));
}

// A full disk (simulated by the file-size limit) while writing the outputs: the error names the file
// and says why, and the temporary files are gone.
TEST(Outputs, FailedWritesSayWhyAndLeaveNoTemporaries) {
  const std::string dir = ::testing::TempDir() + "/track_out_full_disk";
  fs::remove_all(dir);
  std::string msg = testing_support::error_under_file_size_limit(100, [&] {
    OutputOptions opt;
    opt.prompt = "dog";
    TrackWriter w(dir, 640, 480, opt);
    for (int i = 0; i < 4; ++i) {
      FrameOutput out = one_object(640, 480, 1, 10 + i, 20);
      out.frame_index = i;
      w.add(flat_frame(640, 480, uint8_t(40 * i)), out);
    }
    w.finish();
  });
  EXPECT_NE(msg.find(std::strerror(EFBIG)), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot write '" + dir), std::string::npos) << msg;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  fs::remove_all(dir);
}
