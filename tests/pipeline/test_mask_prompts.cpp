// Mask prompts (segmux extension Prompt::mask; pipeline/predictor/mask_prompts.h): the mask at the two
// sizes the official tracker's add_new_masks reads (torch's antialiased bilinear, values below computed
// with torch 1.13 F.interpolate(mode="bilinear", antialias=True, align_corners=False)), and the errors
// bad masks get, before the session is touched.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "common/error_text.h"
#include "common/replayed_session.h"
#include "pipeline/predictor/mask_prompts.h"
#include "pipeline/predictor/session_api.h"
#include "verify/replay_backend.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

using segmux::test::error_of;

// 6 x 8, rows 1..3 x columns 2..6 set.
BinaryMask small_mask() {
  BinaryMask m(6, 8);
  for (int y = 1; y < 4; ++y)
    for (int x = 2; x < 7; ++x) m.at(y, x) = 1;
  return m;
}

Prompt mask_prompt(BinaryMask m, int64_t obj_id = 3) {
  Prompt p;
  p.obj_id = obj_id;
  p.mask = std::move(m);
  return p;
}

}  // namespace

TEST(MaskPrompts, DownsizingIsTorchsAntialiasedBilinear) {
  const std::vector<float> want = {0.0f,       0.2777778f, 0.375f,     0.375f, 0.1534091f, 0.0f,       0.7407408f,
                                   1.0f,       1.0f,       0.4090908f, 0.0f,   0.4938271f, 0.6666666f, 0.6666666f,
                                   0.2727272f, 0.0f,       0.0f,       0.0f,   0.0f,       0.0f};
  const BinaryMask m = small_mask();
  const std::vector<float> got =
      resize_antialias_plane(std::vector<float>(m.pixels.begin(), m.pixels.end()), 6, 8, 4, 5);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(MaskPrompts, TheMaskComesAtTheInputMaskSizeUnbinarisedAndAtTheVideoSizeBinarised) {
  // Upsized to a 12 x 16 "video": torch gives 60 pixels above 0.5.
  const MaskInputs in = tracker_mask_inputs(mask_prompt(small_mask()), 12, 16, 4);
  EXPECT_EQ(in.video_mask.height, 12);
  EXPECT_EQ(in.video_mask.width, 16);
  EXPECT_EQ(in.video_mask.area(), 60);
  ASSERT_EQ(in.input_mask.shape(), Shape({1, 4, 4}));
  // Not binarised: the mask-as-output path reads the interpolated values.
  int fractional = 0;
  for (int64_t i = 0; i < in.input_mask.numel(); ++i) {
    const float v = in.input_mask.data<float>()[i];
    EXPECT_TRUE(v >= 0.f && v <= 1.f);
    fractional += v > 0.f && v < 1.f;
  }
  EXPECT_GT(fractional, 0);
  // A mask at the video size is taken as it is there; one at the input mask size, as it is there.
  const MaskInputs at_video = tracker_mask_inputs(mask_prompt(small_mask()), 6, 8, 4);
  EXPECT_EQ(at_video.video_mask.pixels, small_mask().pixels);
  BinaryMask square(4, 4);
  square.at(1, 2) = 1;
  const MaskInputs at_input = tracker_mask_inputs(mask_prompt(square), 12, 16, 4);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(at_input.input_mask.data<float>()[i], i == 1 * 4 + 2 ? 1.f : 0.f) << i;
}

TEST(MaskPrompts, BadMasksGetErrorsNamingTheProblem) {
  EXPECT_HAS(error_of([] { tracker_mask_inputs(mask_prompt(BinaryMask(0, 0)), 12, 16, 4); }), "the mask is empty");
  EXPECT_HAS(error_of([] { tracker_mask_inputs(mask_prompt(BinaryMask(6, 8)), 12, 16, 4); }),
             "the mask of object 3 has no foreground pixel");
  BinaryMask grey = small_mask();
  grey.at(2, 3) = 255;
  EXPECT_HAS(error_of([&] { tracker_mask_inputs(mask_prompt(grey), 12, 16, 4); }),
             "the mask is not binary (a pixel holds 255");
  Prompt no_id = mask_prompt(small_mask());
  no_id.obj_id.reset();
  EXPECT_HAS(error_of([&] { tracker_mask_inputs(no_id, 12, 16, 4); }), "a mask prompt needs an obj_id");
  Prompt with_points = mask_prompt(small_mask());
  with_points.points_xy = {{0.5f, 0.5f}};
  with_points.point_labels = {1};
  EXPECT_HAS(error_of([&] { tracker_mask_inputs(with_points, 12, 16, 4); }), "a mask prompt excludes points");
  Prompt with_text = mask_prompt(small_mask());
  with_text.text = "shape";
  EXPECT_HAS(error_of([&] { tracker_mask_inputs(with_text, 12, 16, 4); }), "no text or bounding_boxes with it");
  // One pixel of a large mask vanishes at a small video size.
  BinaryMask dot(64, 64);
  dot.at(10, 10) = 1;
  EXPECT_HAS(error_of([&] { tracker_mask_inputs(mask_prompt(dot), 8, 8, 4); }),
             "no foreground pixel at the video size");
}

TEST(MaskPrompts, RefusedMaskPromptsLeaveTheSessionAsItWas) {
  auto replay = segmux::test::replayed_session();
  if (!replay) GTEST_SKIP() << "fixtures not found";
  VideoSession& session = replay->session;
  EXPECT_HAS(error_of([&] { session.add_prompt(16, mask_prompt(small_mask())); }),
             "add_prompt: frame_index 16 is out of range");
  EXPECT_HAS(error_of([&] { session.add_prompt(0, mask_prompt(BinaryMask(240, 320))); }), "no foreground pixel");
  EXPECT_HAS(error_of([&] { session.add_prompt(0, mask_prompt(small_mask(), -1)); }), "obj_id -1 is outside");
  // The session answers as a fresh one does: the official replayed run.
  const FrameOutput first = session.add_prompt(0, Prompt::from_text("shape"));
  EXPECT_EQ(first.obj_ids, (std::vector<int64_t>{0, 1, 2}));
  // The three objects share one tracker state: the official tracker cannot take a mask for one of them.
  BinaryMask video_size(240, 320);
  video_size.at(100, 100) = 1;
  EXPECT_HAS(error_of([&] { session.add_prompt(0, mask_prompt(video_size, 1)); }),
             "add_prompt: object 1 shares its tracker state with other objects");
  int frames = 0;
  session.propagate({}, [&](const FrameOutput&) { return ++frames, true; });
  EXPECT_EQ(frames, 16);
}
