// A refused request changes nothing (issue 22): ids outside the client range, a frame outside the
// video and a text that is not UTF-8 are refused before the session is touched, so the next requests
// run as if the refused one had never come.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/error_text.h"
#include "common/replayed_session.h"
#include "pipeline/predictor/client_ids.h"
#include "pipeline/predictor/session_api.h"
#include "verify/replay_backend.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

using segmux::test::error_of;

}  // namespace

TEST(SessionRefusals, RefusedPromptsLeaveTheSessionAsItWas) {
  auto replay = segmux::test::replayed_session();
  if (!replay) GTEST_SKIP() << "fixtures not found";
  VideoSession& session = replay->session;

  // A text the tokenizer cannot read stayed as a concept before: every later propagation failed.
  EXPECT_HAS(error_of([&] { session.add_prompt(0, Prompt::from_text("sh\xff\xfe")); }),
             "add_prompt: the text \"sh\\xFF\\xFE\" is not valid UTF-8");
  EXPECT_HAS(error_of([&] { session.add_prompt(16, Prompt::from_text("shape")); }),
             "add_prompt: frame_index 16 is out of range for a video of 16 frames");
  Prompt huge;
  huge.obj_id = INT64_MAX;  // the next ids wrapped to -2^63 before
  huge.points_xy = {{0.5f, 0.5f}};
  huge.point_labels = {1};
  EXPECT_HAS(error_of([&] { session.add_prompt(0, huge); }), "obj_id 9223372036854775807 is outside 0..2147483647");
  huge.obj_id = -1;
  EXPECT_HAS(error_of([&] { session.add_prompt(0, huge); }), "obj_id -1 is outside");
  EXPECT_HAS(error_of([&] { session.remove_object(int64_t(1) << 40); }), "remove_object: obj_id 1099511627776");

  // The session answers as a fresh one does: the official replayed run, all 16 frames.
  const FrameOutput first = session.add_prompt(0, Prompt::from_text("shape"));
  EXPECT_EQ(first.obj_ids, (std::vector<int64_t>{0, 1, 2}));
  int frames = 0;
  session.propagate({}, [&](const FrameOutput&) { return ++frames, true; });
  EXPECT_EQ(frames, 16);
}

TEST(SessionRefusals, ClientIdRangeIsOneRule) {
  EXPECT_NO_THROW(check_client_obj_id(0, "x"));
  EXPECT_NO_THROW(check_client_obj_id(kMaxClientObjId, "x"));
  EXPECT_HAS(error_of([] { check_client_obj_id(kMaxClientObjId + 1, "request 3"); }),
             "request 3: obj_id 2147483648 is outside 0..2147483647");
}
