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
  // and scores on every frame; its masks of the refined object do not (docs/track.md): the official
  // predictor refines it in an extracted single-object state, ours keeps it in its state.
  for (size_t i = 0; i < rep.requests.size(); ++i) {
    if (i == 6) continue;
    EXPECT_TRUE(rep.requests[i].matched) << "request " << i << " (" << rep.requests[i].type << ")";
  }
  EXPECT_EQ(rep.requests[6].frames.frames_compared, 16);
  EXPECT_EQ(rep.requests[6].frames.id_mismatches, 0);
  EXPECT_EQ(rep.requests[6].frames.prob_mismatches, 0);
}
