// segmux_session_add_mask (issue 25 item 1): the mask prompt through the C API gives the official
// outputs of tests/fixtures/sam31-tiny-masks (its first session: object 1 from a mask on frame 0, then
// propagated forward), and bad masks are refused with SEGMUX_ERROR_INVALID_ARGUMENT, changing nothing.
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capi_tracking/fixture_model.h"
#include "common/rle_json.h"
#include "common/run_command.h"

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::string kFrames = kFixture + "/video/frames";
const std::string kTrace = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-masks/video/trace.json";

struct Seen {
  std::vector<int> frames;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<segmux::pipeline::BinaryMask>> masks;
};

int on_frame(void* user, const segmux_frame* f) {
  auto& out = *static_cast<Seen*>(user);
  out.frames.push_back(segmux_frame_index(f));
  out.ids.emplace_back();
  out.masks.emplace_back();
  const int w = segmux_frame_width(f), h = segmux_frame_height(f);
  for (size_t k = 0; k < segmux_frame_num_objects(f); ++k) {
    out.ids.back().push_back(segmux_frame_obj_ids(f)[k]);
    segmux::pipeline::BinaryMask m(h, w);
    std::copy(segmux_frame_mask(f, k), segmux_frame_mask(f, k) + m.pixels.size(), m.pixels.begin());
    for (auto& v : m.pixels) v = v != 0;
    out.masks.back().push_back(std::move(m));
  }
  return 1;
}

}  // namespace

TEST(CApiMasks, MaskPromptMatchesTheOfficialTraceAndBadMasksChangeNothing) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "sam31-tiny-masks fixtures not found";
  const nlohmann::json reqs = nlohmann::json::parse(segmux::test::read_text(kTrace))["requests"];
  const segmux::pipeline::BinaryMask disc = segmux::test::mask_of(reqs[0]["object_mask"]);
  segmux_model* m = segmux::test::open_fixture_model(kFixture);
  ASSERT_NE(m, nullptr);
  segmux_session* s = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();

  // Refused, each naming the problem; the session stays as it was.
  std::vector<uint8_t> grey(disc.pixels);
  grey[1000] = 7;
  EXPECT_EQ(segmux_session_add_mask(s, 0, 1, grey.data(), disc.width, disc.height, nullptr),
            SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("not binary: byte 1000 is 7"), std::string::npos)
      << segmux_last_error();
  const std::vector<uint8_t> blank(disc.pixels.size(), 0);
  EXPECT_EQ(segmux_session_add_mask(s, 0, 1, blank.data(), disc.width, disc.height, nullptr),
            SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("no foreground pixel"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(segmux_session_add_mask(s, 16, 1, disc.pixels.data(), disc.width, disc.height, nullptr),
            SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_add_mask(s, 0, -2, disc.pixels.data(), disc.width, disc.height, nullptr),
            SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_add_mask(s, 0, 1, nullptr, disc.width, disc.height, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_add_mask(s, 0, 1, disc.pixels.data(), 0, disc.height, nullptr),
            SEGMUX_ERROR_INVALID_ARGUMENT);

  // 255 for the object reads as 1 (what an 8-bit mask image holds).
  std::vector<uint8_t> bytes(disc.pixels);
  for (auto& v : bytes) v = v ? 255 : 0;
  segmux_frame* first = nullptr;
  ASSERT_EQ(segmux_session_add_mask(s, 0, 1, bytes.data(), disc.width, disc.height, &first), SEGMUX_OK)
      << segmux_last_error();
  // As officially: the answer on a frame nothing has answered yet is empty (the propagation shows it).
  EXPECT_EQ(segmux_frame_num_objects(first), 0u);
  EXPECT_EQ(reqs[0]["outputs"]["obj_ids"].size(), 0u);
  segmux_frame_free(first);
  segmux_propagate_options o;
  segmux_propagate_options_init(&o);
  o.direction = SEGMUX_FORWARD;
  o.start_frame_index = 0;
  Seen seen;
  ASSERT_EQ(segmux_session_propagate(s, &o, on_frame, &seen), SEGMUX_OK) << segmux_last_error();
  const auto& want = reqs[1]["yields"];
  ASSERT_EQ(seen.frames.size(), want.size());
  for (size_t f = 0; f < want.size(); ++f) {
    ASSERT_EQ(seen.ids[f], want[f]["obj_ids"].get<std::vector<int64_t>>()) << "frame " << f;
    for (size_t k = 0; k < seen.ids[f].size(); ++k)
      EXPECT_GE(segmux::test::mask_iou(seen.masks[f][k], segmux::test::mask_of(want[f]["masks_rle"][k])), 0.98)
          << "frame " << f;
  }
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}
