// Box exemplars in `segmux track` (detector geometry, issue 12 point 1): every case of
// tests/fixtures/sam31-tiny-prompts/video/exemplar_cases.json run as a --requests file (official
// add_prompt with bounding_boxes, with and without text) gives the official add_prompt outputs on the
// prompted frame (ids, scores, masks); --box on the command line; bad boxes name the problem.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/rle_json.h"
#include "common/run_command.h"
#include "track/track_cli.h"

namespace fs = std::filesystem;

namespace {

const fs::path kCases = fs::path(SEGMUX_SOURCE_DIR) / "tests/fixtures/sam31-tiny-prompts/video/exemplar_cases.json";

class TrackExemplars : public segmux::test::TrackCli {};

}  // namespace

TEST_F(TrackExemplars, RequestsEqualTheOfficialAddPromptOutputs) {
  if (!fs::exists(kCases)) GTEST_SKIP() << "sam31-tiny-prompts fixtures not found";
  const nlohmann::json cases = nlohmann::json::parse(segmux::test::read_text(kCases));
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    const std::string name = c["name"];
    std::ofstream(tmp(name + ".json")) << nlohmann::json::array({c["request"]}).dump();
    auto r = track("--requests " + tmp(name + ".json") + " --out " + tmp(name));
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    const nlohmann::json got = tracks_json(tmp(name));
    ASSERT_EQ(got["frames"].size(), 1u) << name;
    const auto& objs = got["frames"][0]["objects"];
    const auto& ref = c["outputs"];
    ASSERT_EQ(objs.size(), ref["obj_ids"].size()) << name;
    for (size_t k = 0; k < objs.size(); ++k) {
      EXPECT_EQ(objs[k]["id"], ref["obj_ids"][k]) << name;
      EXPECT_NEAR(objs[k]["score"].get<double>(), ref["probs"][k].get<double>(), 1e-4) << name << " object " << k;
      const auto mine = segmux::test::mask_of(objs[k]["mask_rle"]), theirs = segmux::test::mask_of(ref["masks_rle"][k]);
      // Detector-side masks through the tracker's mask path: the tolerance of `segmux parity --video`.
      EXPECT_GE(segmux::test::mask_iou(mine, theirs), 0.98)
          << name << " object " << k << ": area " << mine.area() << " vs " << theirs.area();
      if (!c["request"].contains("text")) {
        EXPECT_EQ(objs[k]["prompt"], "<text placeholder>") << name;
      }
    }
    ++compared;
  }
  EXPECT_EQ(compared, int(cases["cases"].size()));
  EXPECT_GE(compared, 5);
}

TEST_F(TrackExemplars, BoxOnTheCommandLine) {
  // The text_posbox case's box in pixels on the --start frame, with the text; then propagated.
  auto r = track("--prompt shape --box 133,54,60,50 --max-frames 3 --out " + tmp("cli"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json got = tracks_json(tmp("cli"));
  ASSERT_EQ(got["frames"].size(), 3u);
  EXPECT_FALSE(got["frames"][0]["objects"].empty());
  r = track("--box 133,54,60,50 --box 0,39,251,176:neg --max-frames 2 --out " + tmp("cli2"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json box_only = tracks_json(tmp("cli2"));
  for (const auto& o : box_only["frames"][0]["objects"]) EXPECT_EQ(o["prompt"], "<text placeholder>");
}

TEST_F(TrackExemplars, BadBoxesNameTheProblem) {
  expect_failure(track("--box 10,10,0,4 --out " + tmp("b1")), tmp("b1"), "is empty");
  expect_failure(track("--box 300,10,40,20 --out " + tmp("b2")), tmp("b2"), "not inside the 320x240 frame");
  expect_failure(track("--box 10,10,20,20 --frame 3 --out " + tmp("b3")), tmp("b3"), "--start");
  auto bad = [&](const std::string& name, const std::string& body, const std::string& words) {
    std::ofstream(tmp(name + ".json")) << body;
    expect_failure(track("--requests " + tmp(name + ".json") + " --out " + tmp(name)), tmp(name), words);
  };
  bad("r1", R"([{"type": "add_prompt", "frame_index": 0, "bounding_boxes": [[0.5, 0.5, 0.6, 0.1]],
               "bounding_box_labels": [1]}])",
      "request 0 (add_prompt): a box in 'bounding_boxes' reaches outside the frame");
  bad("r2", R"([{"type": "add_prompt", "frame_index": 0, "bounding_boxes": [[0.1, 0.1, 0.0, 0.1]],
               "bounding_box_labels": [1]}])",
      "an empty box");
  bad("r3", R"([{"type": "add_prompt", "frame_index": 0, "bounding_boxes": [[0.1, 0.1, 0.2, 0.1]]}])",
      "'bounding_boxes' need 'bounding_box_labels'");
  bad("r4", R"([{"type": "add_prompt", "frame_index": 0, "bounding_boxes": [[0.1, 0.1, 0.2, 0.1]],
               "bounding_box_labels": [7]}])",
      "must be 1 (positive) or 0 (negative)");
  bad("r5", R"([{"type": "add_prompt", "frame_index": 0, "bounding_boxes": [[0.1, 0.1, 0.2, 0.1], [0.1, 0.1, 0.2, 0.1],
               [0.1, 0.1, 0.2, 0.1], [0.1, 0.1, 0.2, 0.1], [0.1, 0.1, 0.2, 0.1], [0.1, 0.1, 0.2, 0.1], [0.1, 0.1, 0.2, 0.1],
               [0.1, 0.1, 0.2, 0.1], [0.1, 0.1, 0.2, 0.1]], "bounding_box_labels": [1, 1, 1, 1, 1, 1, 1, 1, 1]}])",
      "detector_max_boxes");
}
