// The C API's sessions as the one session type makes them: several sessions on one model, interleaved,
// each answered as if alone; live frames tracked exactly as the same frames from a folder; clicks answered
// with the frame's other objects on every kind of session. (Fixture model; SLOW folder.)
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "capi_tracking/fixture_model.h"
#include "capi_tracking/frame_copies.h"
#include "pipeline/media/video_io.h"

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::string kFrames = kFixture + "/video/frames";
// Another video of the same size (the fixture frames mirrored): what one session shows must never leak
// into the other.
const std::string kMirrorFrames = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-mirror/video/frames";

using namespace segmux::test;  // frame_copies.h

// A session's whole run alone: its prompt's outputs, then a propagation in both directions.
std::vector<FrameCopy> alone(segmux_model* m, const std::string& frames, int prompt_frame) {
  segmux_session* s = nullptr;
  EXPECT_EQ(segmux_session_open_video(m, frames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  const segmux_prompt p = text_prompt(prompt_frame);
  segmux_frame* first = nullptr;
  EXPECT_EQ(segmux_session_add_prompt(s, &p, &first), SEGMUX_OK) << segmux_last_error();
  std::vector<FrameCopy> outs{take_frame(first)};
  for (FrameCopy& o : propagate(s, nullptr)) outs.push_back(std::move(o));
  segmux_session_close(s);
  return outs;
}

}  // namespace

// Two sessions of one model, on two videos of the same size and the same frame indices, their requests
// interleaved frame by frame (pulled propagations open in both at once): each gets exactly its outputs
// alone. Before one session type, the model refused the second session (SEGMUX_ERROR_BUSY).
TEST(CApiSessions, InterleavedSessionsAnswerAsAlone) {
  segmux_model* m = segmux::test::open_fixture_model(kFixture);
  ASSERT_NE(m, nullptr);
  const std::vector<FrameCopy> want_a = alone(m, kFrames, 0), want_b = alone(m, kMirrorFrames, 3);
  ASSERT_GT(objects_in(want_a), 0u);
  ASSERT_GT(objects_in(want_b), 0u);

  segmux_session *a = nullptr, *b = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &a), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_session_open_video(m, kMirrorFrames.c_str(), &b), SEGMUX_OK) << segmux_last_error();
  const segmux_prompt pa = text_prompt(0), pb = text_prompt(3);
  segmux_frame *fa = nullptr, *fb = nullptr;
  ASSERT_EQ(segmux_session_add_prompt(a, &pa, &fa), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_session_add_prompt(b, &pb, &fb), SEGMUX_OK) << segmux_last_error();
  std::vector<FrameCopy> got_a{take_frame(fa)}, got_b{take_frame(fb)};
  ASSERT_EQ(segmux_session_propagate_begin(a, nullptr), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_session_propagate_begin(b, nullptr), SEGMUX_OK) << segmux_last_error();
  bool a_done = false, b_done = false;
  while (!a_done || !b_done) {
    for (auto [s, got, done] : {std::tuple{a, &got_a, &a_done}, std::tuple{b, &got_b, &b_done}}) {
      if (*done) continue;
      segmux_frame* f = nullptr;
      const segmux_status st = segmux_session_next_frame(s, &f);
      ASSERT_TRUE(st == SEGMUX_OK || st == SEGMUX_END) << segmux_last_error();
      if (st == SEGMUX_END) {
        *done = true;
      } else {
        got->push_back(take_frame(f));
      }
    }
  }
  expect_same(got_a, want_a, "session a");
  expect_same(got_b, want_b, "session b");
  EXPECT_EQ(segmux_model_close(m), SEGMUX_ERROR_BUSY);  // its sessions are open
  segmux_session_close(a);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_ERROR_BUSY);
  segmux_session_close(b);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}

// An image of the model while its video sessions are open: it runs on a model session of its own, also
// from another thread while a session's propagation is pulled, and every answer is what it is alone.
// Before, the model refused images while a session was open (SEGMUX_ERROR_BUSY).
TEST(CApiSessions, ImagesRunBesideOpenSessions) {
  segmux_model* m = segmux::test::open_fixture_model(kFixture);
  ASSERT_NE(m, nullptr);
  const std::string image = kFrames + "/00002.png";
  const char* text[1] = {"shape"};
  segmux_image_prompt ip;
  segmux_image_prompt_init(&ip);
  ip.texts = text;
  ip.num_texts = 1;
  auto segment = [&](FrameCopy& out) {
    segmux_frame* f = nullptr;
    const segmux_status st = segmux_model_segment_file(m, image.c_str(), &ip, &f);
    if (st == SEGMUX_OK) out = take_frame(f);
    return st;
  };
  FrameCopy image_alone;
  ASSERT_EQ(segment(image_alone), SEGMUX_OK) << segmux_last_error();
  ASSERT_FALSE(image_alone.ids.empty());
  const std::vector<FrameCopy> want = alone(m, kFrames, 0);

  segmux_session* s = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  FrameCopy beside;
  ASSERT_EQ(segment(beside), SEGMUX_OK) << segmux_last_error();
  EXPECT_TRUE(beside == image_alone) << "an image while a session is open";
  const segmux_prompt p = text_prompt(0);
  segmux_frame* first = nullptr;
  ASSERT_EQ(segmux_session_add_prompt(s, &p, &first), SEGMUX_OK) << segmux_last_error();
  std::vector<FrameCopy> got{take_frame(first)};
  ASSERT_EQ(segmux_session_propagate_begin(s, nullptr), SEGMUX_OK) << segmux_last_error();
  std::vector<FrameCopy> concurrent(3);
  std::vector<segmux_status> statuses(concurrent.size(), SEGMUX_OK);
  std::thread images([&] {
    for (size_t i = 0; i < concurrent.size(); ++i) statuses[i] = segment(concurrent[i]);
  });
  for (;;) {
    segmux_frame* f = nullptr;
    const segmux_status st = segmux_session_next_frame(s, &f);
    if (st != SEGMUX_OK) {
      EXPECT_EQ(st, SEGMUX_END) << segmux_last_error();
      break;
    }
    got.push_back(take_frame(f));
  }
  images.join();
  for (size_t i = 0; i < concurrent.size(); ++i) {
    EXPECT_EQ(statuses[i], SEGMUX_OK) << "image " << i << " beside the propagation";
    EXPECT_TRUE(concurrent[i] == image_alone) << "image " << i << " beside the propagation";
  }
  expect_same(got, want, "the session beside images");
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}

// A folder of `count` frames: the fixture video forward, then back again (a video longer than the
// fixture's 16 frames).
std::string ping_pong_folder(int count) {
  const std::string dir = ::testing::TempDir() + "/segmux_ping_pong_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto reader = segmux::pipeline::open_video(kFrames);
  const int n = reader->num_frames();
  for (int t = 0; t < count; ++t) {
    const int k = (t / n) % 2 == 0 ? t % n : n - 1 - t % n;
    const segmux::pipeline::RgbFrame f = reader->frame(k);
    char name[32];
    std::snprintf(name, sizeof name, "/%05d.png", t);
    segmux::pipeline::write_png_rgb(dir + name, f);
  }
  return dir;
}

// Frames pushed one at a time, a forward propagation after each and the end of the stream announced:
// the same frames, in the same order, with the same outputs as one propagation on a folder of those
// frames (before: the prompted frame was never delivered, and each frame came at once without the
// hot-start rule, so objects were found later). As officially, object pointers' temporal positions are
// normalised by the frames known (at most max_obj_ptrs_in_encoder = 16): the stream starts tracking
// once 16 frames are known, then goes on frame by frame with 16 frames held.
TEST(CApiSessions, LiveFramesGiveWhatTheSameFramesFromAFolderGive) {
  const std::string folder_path = ping_pong_folder(22);
  segmux_model* m = segmux::test::open_fixture_model(kFixture);
  ASSERT_NE(m, nullptr);
  segmux_session* folder = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, folder_path.c_str(), &folder), SEGMUX_OK) << segmux_last_error();
  const segmux_prompt p = text_prompt(0);
  segmux_frame* f = nullptr;
  ASSERT_EQ(segmux_session_add_prompt(folder, &p, &f), SEGMUX_OK) << segmux_last_error();
  const FrameCopy want_first = take_frame(f);
  const segmux_propagate_options fwd = forward_from(-1);
  const std::vector<FrameCopy> want = propagate(folder, &fwd);
  segmux_session_close(folder);
  ASSERT_EQ(want.size(), 22u);
  ASSERT_GT(objects_in(want), 0u);

  auto reader = segmux::pipeline::open_video(folder_path);
  segmux_session* live = nullptr;
  ASSERT_EQ(segmux_session_open_live(m, reader->width(), reader->height(), 16, &live), SEGMUX_OK);
  std::vector<FrameCopy> got;
  size_t calls_without_output = 0;
  for (int t = 0; t < reader->num_frames(); ++t) {
    const segmux::pipeline::RgbFrame rgb = reader->frame(t);
    ASSERT_EQ(segmux_session_push_frame(live, rgb.pixels.data(), rgb.width, rgb.height, 0, nullptr), SEGMUX_OK)
        << segmux_last_error();
    if (t < 15) continue;
    if (t == 15) {
      ASSERT_EQ(segmux_session_add_prompt(live, &p, &f), SEGMUX_OK) << segmux_last_error();
      EXPECT_TRUE(take_frame(f) == want_first);
    }
    std::vector<FrameCopy> released = propagate(live, &fwd);
    calls_without_output += released.empty();
    for (FrameCopy& o : released) got.push_back(std::move(o));
  }
  EXPECT_LT(got.size(), want.size());  // the hot-start rule still holds the last frames back
  EXPECT_GT(calls_without_output, 0u);
  ASSERT_EQ(segmux_session_end_stream(live), SEGMUX_OK) << segmux_last_error();
  for (FrameCopy& o : propagate(live, &fwd)) got.push_back(std::move(o));
  expect_same(got, want, "live session");
  const std::vector<uint8_t> rgb(size_t(3) * reader->width() * reader->height());
  EXPECT_EQ(segmux_session_push_frame(live, rgb.data(), reader->width(), reader->height(), 0, nullptr),
            SEGMUX_ERROR_INVALID_ARGUMENT);  // after the end of the stream
  segmux_session_close(live);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
  std::filesystem::remove_all(folder_path);
}

// A click (points with an object id) on a frame after a propagation answers with the frame's other
// objects too, on a live session as on a video (before: a live session answered with nothing).
TEST(CApiSessions, ClicksAnswerWithTheFramesOtherObjects) {
  segmux_model* m = segmux::test::open_fixture_model(kFixture);
  ASSERT_NE(m, nullptr);
  segmux_prompt click;
  segmux_prompt_init(&click);
  click.frame_index = 6;
  const float point[2] = {0.6125f, 0.375f};
  const int label = 1;
  click.points_xy = point;
  click.point_labels = &label;
  click.num_points = 1;
  click.obj_id = 2;
  const segmux_prompt p = text_prompt(0);
  const segmux_propagate_options fwd = forward_from(-1);

  segmux_session* video = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &video), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_session_add_prompt(video, &p, nullptr), SEGMUX_OK) << segmux_last_error();
  const std::vector<FrameCopy> propagated = propagate(video, &fwd);
  ASSERT_EQ(propagated.size(), 16u);
  segmux_frame* f = nullptr;
  ASSERT_EQ(segmux_session_add_prompt(video, &click, &f), SEGMUX_OK) << segmux_last_error();
  const FrameCopy want = take_frame(f);
  segmux_session_close(video);
  std::vector<int64_t> others;  // the objects frame 6 showed, but the clicked one
  for (int64_t id : propagated[6].ids)
    if (id != click.obj_id) others.push_back(id);
  ASSERT_FALSE(others.empty());
  for (int64_t id : others) EXPECT_NE(std::find(want.ids.begin(), want.ids.end(), id), want.ids.end()) << id;

  // The live session knows the 16 frames before it tracks them, so its outputs are the video's
  // (docs/library.md: object pointers' temporal positions follow the frames known).
  auto reader = segmux::pipeline::open_video(kFrames);
  segmux_session* live = nullptr;
  ASSERT_EQ(segmux_session_open_live(m, reader->width(), reader->height(), 16, &live), SEGMUX_OK);
  for (int t = 0; t < reader->num_frames(); ++t) {
    const segmux::pipeline::RgbFrame rgb = reader->frame(t);
    ASSERT_EQ(segmux_session_push_frame(live, rgb.pixels.data(), rgb.width, rgb.height, 0, nullptr), SEGMUX_OK);
  }
  ASSERT_EQ(segmux_session_add_prompt(live, &p, nullptr), SEGMUX_OK) << segmux_last_error();
  EXPECT_TRUE(propagate(live, &fwd).empty());  // held back by the hot-start rule: the stream goes on
  ASSERT_EQ(segmux_session_end_stream(live), SEGMUX_OK);
  expect_same(propagate(live, &fwd), propagated, "live session");
  ASSERT_EQ(segmux_session_add_prompt(live, &click, &f), SEGMUX_OK) << segmux_last_error();
  const FrameCopy got = take_frame(f);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_TRUE(got == want) << "the live session's click response differs from the video session's";
  segmux_session_close(live);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}
