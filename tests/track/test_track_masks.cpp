// Mask prompts in `segmux track` (issue 25 item 1): --mask FILE.png[:OBJ[:FRAME]] runs as the official
// request sequence of tests/fixtures/sam31-tiny-masks (its first session: a new object from a mask on
// frame 0, propagated forward) and gives the official outputs; bad mask files, frames and ids name the
// problem, exit non-zero and leave no outputs; request files refuse bad "object_mask" fields and the
// orders of masks for existing objects the official tracker fails on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/rle_json.h"
#include "common/run_command.h"
#include "pipeline/media/video_io.h"
#include "track/track_cli.h"

namespace fs = std::filesystem;
using segmux::pipeline::BinaryMask;

namespace {

const fs::path kTrace = fs::path(SEGMUX_SOURCE_DIR) / "tests/fixtures/sam31-tiny-masks/video/trace.json";

class TrackMasks : public segmux::test::TrackCli {
 protected:
  // A mask as a black / white PNG (`value` for the object's pixels).
  static std::string write_mask_png(const std::string& name, const BinaryMask& m, uint8_t value = 255) {
    segmux::pipeline::RgbImage img;
    img.width = m.width;
    img.height = m.height;
    img.pixels.resize(size_t(m.width) * size_t(m.height) * 3);
    for (size_t i = 0; i < m.pixels.size(); ++i)
      for (int c = 0; c < 3; ++c) img.pixels[i * 3 + size_t(c)] = m.pixels[i] ? value : 0;
    segmux::pipeline::write_png_rgb(tmp(name), img);
    return tmp(name);
  }
};

}  // namespace

TEST_F(TrackMasks, MaskFileRunsAsTheOfficialMaskPromptSequence) {
  if (!fs::exists(kTrace)) GTEST_SKIP() << "sam31-tiny-masks fixtures not found";
  const nlohmann::json reqs = nlohmann::json::parse(segmux::test::read_text(kTrace))["requests"];
  ASSERT_EQ(reqs[0]["obj_id"], 1);  // add_prompt: object 1 from a mask on frame 0
  ASSERT_EQ(reqs[1]["type"], "propagate_in_video");
  const std::string png = write_mask_png("disc.png", segmux::test::mask_of(reqs[0]["object_mask"]));
  auto r = track("--mask " + png + ":1:0 --direction forward --out " + tmp("disc"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json got = tracks_json(tmp("disc"));
  const auto& want = reqs[1]["yields"];
  ASSERT_EQ(got["frames"].size(), want.size());
  for (size_t f = 0; f < want.size(); ++f) {
    const auto& objs = got["frames"][f]["objects"];
    ASSERT_EQ(objs.size(), want[f]["obj_ids"].size()) << "frame " << f;
    for (size_t k = 0; k < objs.size(); ++k) {
      EXPECT_EQ(objs[k]["id"], want[f]["obj_ids"][k]) << "frame " << f;
      const BinaryMask mine = segmux::test::mask_of(objs[k]["mask_rle"]);
      const BinaryMask theirs = segmux::test::mask_of(want[f]["masks_rle"][k]);
      EXPECT_GE(segmux::test::mask_iou(mine, theirs), 0.98)
          << "frame " << f << ": " << mine.area() << " vs " << theirs.area();
    }
  }
  // The same mask given as --obj-id / --frame, and 0 / 1 pixel values, read the same.
  const std::string png01 = write_mask_png("disc01.png", segmux::test::mask_of(reqs[0]["object_mask"]), 1);
  r = track("--mask " + png01 + " --obj-id 1 --frame 0 --direction forward --max-frames 2 --out " + tmp("disc01"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json got01 = tracks_json(tmp("disc01"));
  EXPECT_EQ(got01["frames"][0]["objects"][0]["mask_rle"], got["frames"][0]["objects"][0]["mask_rle"]);
}

TEST_F(TrackMasks, BadMasksNameTheProblem) {
  BinaryMask m(240, 320);
  for (int y = 50; y < 90; ++y)
    for (int x = 100; x < 140; ++x) m.at(y, x) = 1;
  const std::string good = write_mask_png("good.png", m);
  const std::string grey = write_mask_png("grey.png", m, 128);
  const std::string empty = write_mask_png("empty.png", BinaryMask(240, 320));
  std::ofstream(tmp("bad.png"), std::ios::binary) << "not a png at all";
  expect_failure(track("--mask " + grey + " --obj-id 1 --out " + tmp("o1")), tmp("o1"),
                 "not a binary mask: pixel (100, 50) is (128, 128, 128)");
  expect_failure(track("--mask " + empty + " --obj-id 1 --out " + tmp("o2")), tmp("o2"), "the mask is empty");
  expect_failure(track("--mask " + tmp("bad.png") + " --obj-id 1 --out " + tmp("o3")), tmp("o3"),
                 "not a readable image");
  expect_failure(track("--mask " + good + ":1:16 --out " + tmp("o4")), tmp("o4"), "frame 16 is outside the video");
  expect_failure(track("--mask " + good + " --out " + tmp("o5")), tmp("o5"), "needs an object id");
  expect_failure(track("--mask " + tmp("missing.png") + ":2 --out " + tmp("o6")), tmp("o6"), "no such file");

  // Request files: the extension field "object_mask" (COCO uncompressed RLE).
  auto bad = [&](const std::string& name, const std::string& body, const std::string& words) {
    std::ofstream(tmp(name + ".json")) << body;
    expect_failure(track("--requests " + tmp(name + ".json") + " --out " + tmp(name)), tmp(name), words);
  };
  bad("noid", R"([{"type": "add_prompt", "frame_index": 0, "object_mask": {"size": [2, 2], "counts": [1, 3]}}])",
      "request 0 (add_prompt): 'object_mask' needs an 'obj_id'");
  bad("runs",
      R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": {"size": [2, 2], "counts": [1, 2]}}])",
      "'object_mask' runs cover 3 pixels, its size 2x2 has 4");
  bad("size",
      R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": {"size": [0, 2], "counts": []}}])",
      "'object_mask' size 0x2 is outside 1..16384");
  bad("huge",
      R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": {"size": [100000, 100000], "counts": [1]}}])",
      "is outside 1..16384");
  bad("form", R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": [[0, 1]]}])",
      "'object_mask' must be an RLE mask");
  bad("blank",
      R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": {"size": [2, 2], "counts": [4]}}])",
      "has no foreground pixel");
  // A mask for an existing object where the official add_new_masks fails (tools/fixtures
  // sam31-tiny-masks-existing "official_failures"): a frame its state has no output on, and a frame
  // whose output dates from before an earlier mask for the object on another frame.
  const std::string disc =
      nlohmann::json{{"size", {m.height, m.width}}, {"counts", segmux::pipeline::rle_encode(m).counts}}.dump();
  bad("untracked",
      R"([{"type": "add_prompt", "frame_index": 3, "obj_id": 2, "object_mask": )" + disc +
          R"(}, {"type": "add_prompt", "frame_index": 8, "obj_id": 2, "object_mask": )" + disc + "}]",
      "object 2 has no output on frame 8 to add a mask to");
  bad("stale",
      R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": )" + disc +
          R"(}, {"type": "propagate_in_video", "start_frame_index": 0, "max_frame_num_to_track": 2},
          {"type": "add_prompt", "frame_index": 1, "obj_id": 1, "object_mask": )" +
          disc + R"(}, {"type": "add_prompt", "frame_index": 2, "obj_id": 1, "object_mask": )" + disc + "}]",
      "output on frame 2 dates from before its last mask on another frame");
  bad("click",
      R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "object_mask": )" + disc +
          R"(}, {"type": "propagate_in_video", "start_frame_index": 0, "max_frame_num_to_track": 1},
          {"type": "add_prompt", "frame_index": 1, "obj_id": 1, "object_mask": )" +
          disc +
          R"(}, {"type": "add_prompt", "frame_index": 1, "obj_id": 1, "points": [[0.375, 0.29]], "point_labels": [1]}])",
      "cannot refine it with points on tracked frame 1");
  bad("pts", R"([{"type": "add_prompt", "frame_index": 0, "obj_id": 1, "points": [[0.5, 0.5]], "point_labels": [1],
          "object_mask": {"size": [2, 2], "counts": [1, 3]}}])",
      "'object_mask' excludes 'points'");
}
