// The C API (include/segmux/segmux.h) on the fixture model: the same outputs as the session type it wraps,
// pulled and called back alike; busy handles refused; live input. (End-to-end runs: SLOW.)
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi_tracking/fixture_model.h"
#include "capi_tracking/frame_copies.h"
#include "deploy/model_store/model_store.h"
#include "pipeline/media/live_source.h"
#include "pipeline/media/video_io.h"
#include "pipeline/predictor/session_api.h"
#include "verify/sam31/fixture_config.h"

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::string kFrames = kFixture + "/video/frames";

using namespace segmux::test;  // frame_copies.h

segmux_model* open_fixture_model() { return segmux::test::open_fixture_model(kFixture); }

segmux_session* prompted_session(segmux_model* m) {
  segmux_session* s = nullptr;
  EXPECT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  const segmux_prompt p = text_prompt(0);
  EXPECT_EQ(segmux_session_add_prompt(s, &p, nullptr), SEGMUX_OK) << segmux_last_error();
  return s;
}

}  // namespace

// The C API gives exactly what the session type it wraps gives, by callback and by pulling.
TEST(CApi, FixtureVideoMatchesThePredictorCalledDirectly) {
  namespace pl = segmux::pipeline;
  pl::ModelSource src;
  src.weights = kFixture + "/weights.safetensors";
  src.config = kFixture + "/config.json";
  src.read_config = segmux::verify::load_fixture_config;
  src.vocab = kFixture + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  src.cache_dir = std::string(SEGMUX_BINARY_DIR) + "/capi-test-cache";
  pl::OpenedModel direct = pl::open_model(src, [](const std::string&) {});
  auto video = pl::open_video(kFrames);
  pl::VideoSession session(*direct.model, *video, pl::control_config_for(direct.config));
  session.add_prompt(0, pl::Prompt::from_text("shape"));
  std::vector<FrameCopy> expected;
  session.propagate({}, [&](const pl::FrameOutput& o) {
    FrameCopy e;
    e.index = o.frame_index;
    e.ids = o.obj_ids;
    e.scores = o.probs;
    for (auto& b : o.boxes_xywh) e.boxes.insert(e.boxes.end(), b.begin(), b.end());
    for (auto& m : o.masks) e.masks.push_back(m.pixels);
    expected.push_back(e);
    return true;
  });
  ASSERT_EQ(expected.size(), 16u);

  segmux_model* m = open_fixture_model();
  ASSERT_NE(m, nullptr);
  segmux_session* s = prompted_session(m);
  const std::vector<FrameCopy> called = propagate(s);
  expect_same(called, expected, "called back");
  EXPECT_GT(objects_in(called), 0u);  // the fixture video has objects: the comparison compared something

  // Pulled, after a reset and the same prompt again.
  ASSERT_EQ(segmux_session_reset(s), SEGMUX_OK);
  const segmux_prompt p = text_prompt(0);
  segmux_frame* first = nullptr;
  ASSERT_EQ(segmux_session_add_prompt(s, &p, &first), SEGMUX_OK) << segmux_last_error();
  EXPECT_EQ(segmux_frame_index(first), 0);
  segmux_frame_free(first);
  ASSERT_EQ(segmux_session_propagate_begin(s, nullptr), SEGMUX_OK) << segmux_last_error();
  // Other calls wait for the pull to end: refused, not raced.
  EXPECT_EQ(segmux_session_add_prompt(s, &p, nullptr), SEGMUX_ERROR_BUSY);
  EXPECT_EQ(segmux_session_reset(s), SEGMUX_ERROR_BUSY);
  std::vector<FrameCopy> pulled;
  segmux_frame* f = nullptr;
  segmux_status st;
  while ((st = segmux_session_next_frame(s, &f)) == SEGMUX_OK) {
    pulled.push_back(copy_frame(f));
    if (pulled.size() == 1) {  // RLE of a mask: runs add up to the pixels, ones to the area
      const int64_t* counts = nullptr;
      size_t n = 0;
      ASSERT_EQ(segmux_frame_mask_rle(f, 0, &counts, &n), SEGMUX_OK);
      int64_t total = 0, ones = 0;
      for (size_t i = 0; i < n; ++i) (total += counts[i], ones += (i % 2) ? counts[i] : 0);
      EXPECT_EQ(total, int64_t(segmux_frame_width(f)) * segmux_frame_height(f));
      int64_t area = 0;
      for (size_t i = 0; i < size_t(total); ++i) area += segmux_frame_mask(f, 0)[i];
      EXPECT_EQ(ones, area);
      EXPECT_EQ(segmux_frame_mask_rle(f, 99, &counts, &n), SEGMUX_ERROR_INVALID_ARGUMENT);
    }
    segmux_frame_free(f);
  }
  EXPECT_EQ(st, SEGMUX_END) << segmux_last_error();
  expect_same(pulled, expected, "pulled");

  // A model with an open session cannot close (several sessions: test_capi_sessions.cpp).
  EXPECT_EQ(segmux_model_close(m), SEGMUX_ERROR_BUSY);

  // Stopping early: by the callback, and by cancelling a pull.
  int seen = 0;
  ASSERT_EQ(segmux_session_propagate(
                s, nullptr, [](void* u, const segmux_frame*) { return ++*static_cast<int*>(u) < 3 ? 1 : 0; }, &seen),
            SEGMUX_OK);
  EXPECT_EQ(seen, 3);
  ASSERT_EQ(segmux_session_propagate_begin(s, nullptr), SEGMUX_OK);
  ASSERT_EQ(segmux_session_next_frame(s, &f), SEGMUX_OK);
  segmux_frame_free(f);
  EXPECT_EQ(segmux_session_cancel(s), SEGMUX_OK);
  EXPECT_EQ(segmux_session_next_frame(s, &f), SEGMUX_ERROR_INVALID_ARGUMENT);  // no pull any more
  int removed = -1;
  EXPECT_EQ(segmux_session_remove_object(s, 987654, &removed), SEGMUX_OK);
  EXPECT_EQ(removed, 0);
  // A pull left open is cancelled by close.
  ASSERT_EQ(segmux_session_propagate_begin(s, nullptr), SEGMUX_OK);
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}

// Frames pushed one at a time: each tracked as it arrives, the frame count growing with the stream.
// (The C++ wrapper, segmux.hpp, is exercised by examples/cpp against the installed library: its
// classes share the segmux namespace with the engine's, so it is not linked with the engine here.)
TEST(CApi, LiveFramesAreTrackedAsTheyArrive) {
  auto reader = segmux::pipeline::open_video(kFrames);
  segmux_model* m = open_fixture_model();
  ASSERT_NE(m, nullptr);
  segmux_session* live = nullptr;
  ASSERT_EQ(segmux_session_open_live(m, reader->width(), reader->height(), 2, &live), SEGMUX_OK);
  const segmux_prompt p = text_prompt(0);
  EXPECT_EQ(segmux_session_add_prompt(live, &p, nullptr), SEGMUX_ERROR_FAILED);  // no frame yet
  EXPECT_NE(std::string(segmux_last_error()).find("push one first"), std::string::npos) << segmux_last_error();
  size_t objects = 0;
  for (int t = 0; t < reader->num_frames(); ++t) {
    segmux::pipeline::RgbFrame rgb = reader->frame(t);
    int index = -1, n = -1;
    ASSERT_EQ(segmux_session_push_frame(live, rgb.pixels.data(), rgb.width, rgb.height, 0, &index), SEGMUX_OK)
        << segmux_last_error();
    EXPECT_EQ(index, t);
    ASSERT_EQ(segmux_session_info(live, &n, nullptr, nullptr), SEGMUX_OK);
    EXPECT_EQ(n, t + 1);
    if (t == 0) {
      segmux_frame* first = nullptr;
      ASSERT_EQ(segmux_session_add_prompt(live, &p, &first), SEGMUX_OK) << segmux_last_error();
      objects += segmux_frame_num_objects(first);
      segmux_frame_free(first);
      continue;
    }
    segmux_propagate_options o = forward_from(t);
    o.max_frame_num_to_track = 0;
    const std::vector<FrameCopy> got = propagate(live, &o);
    ASSERT_EQ(got.size(), 1u);  // exactly the new frame, at once (no hot-start delay at the stream's end)
    EXPECT_EQ(got[0].index, t);
    objects += got[0].ids.size();
  }
  EXPECT_GT(objects, 0u);
  // Only the last 2 frames are held.
  EXPECT_EQ(segmux_session_add_prompt(live, &p, nullptr), SEGMUX_ERROR_FAILED);
  EXPECT_NE(std::string(segmux_last_error()).find("no longer held"), std::string::npos) << segmux_last_error();
  const std::vector<uint8_t> small(3 * 4 * 4);
  EXPECT_EQ(segmux_session_push_frame(live, small.data(), 4, 4, 0, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);  // size
  segmux_session* video = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &video), SEGMUX_OK);  // beside the live one
  segmux_session_close(live);
  EXPECT_EQ(segmux_session_push_frame(video, small.data(), 4, 4, 0, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_session_close(video);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}
