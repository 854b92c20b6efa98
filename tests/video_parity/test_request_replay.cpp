// The official request sequence with point prompts (tests/fixtures/sam31-tiny-prompts/video/trace.json
// "requests") replayed through the session API on the compiled candidates: text -> propagate ->
// remove_object -> points on frame 6 (refinement, a second click appended, a new object) -> propagate,
// then the tracker-only cases (a new object by 1 click, 3 clicks, a box) after reset_session.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "verify/video_parity.h"

using namespace segmux::pipeline;

TEST(RequestReplay, PointPromptSequenceMatchesTheOfficialRequests) {
  VideoParityOptions opt;
  opt.fixture_dir = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-prompts";
  opt.cache_dir = ::testing::TempDir() + "/segmux-request-replay-cache";
  std::ostringstream log;
  RequestReplayReport rep = run_request_replay(opt, log);
  std::cout << log.str();
  ASSERT_EQ(rep.requests.size(), 13u);
  // Every request's outputs match. The propagation after the clicks (request 6, the official partial
  // propagation: the tracker for the clicked objects only, merged into the kept outputs) matches in ids
  // and scores on every frame, and in masks on all but a few object-frames: the official interactive
  // tracker reads cached bf16 features there, and bf16 rounding flips grow on the 10-500 px masks of the
  // tracked objects (docs/predictor.md). Before the refinement quirk was reproduced (the refined object
  // re-laid out as a fresh singleton keeping its bucket-row memories) 33 object-frames missed.
  for (size_t i = 0; i < rep.requests.size(); ++i) {
    if (i == 6) continue;
    EXPECT_TRUE(rep.requests[i].matched) << "request " << i << " (" << rep.requests[i].type << ")";
  }
  const VideoParityReport& r6 = rep.requests[6].frames;
  EXPECT_EQ(r6.frames_compared, 16);
  EXPECT_EQ(r6.objects_compared, 53);
  EXPECT_EQ(r6.id_mismatches, 0);
  EXPECT_EQ(r6.prob_mismatches, 0);
  EXPECT_LE(r6.mask_misses, 4);
  EXPECT_LE(r6.worst_box_px, 16.0);
}
