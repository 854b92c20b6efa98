// The session API on the replayed official run.
#include <gtest/gtest.h>

#include <fstream>

#include "common/replayed_session.h"
#include "pipeline/predictor/session_api.h"

using namespace segmux;
using namespace segmux::pipeline;

TEST(Session, ReplayedRunThroughTheRequestApi) {
  auto replay = segmux::test::replayed_session();
  if (!replay) GTEST_SKIP() << "fixtures not found";
  VideoSession& session = replay->session;
  EXPECT_THROW(session.add_prompt(0, Prompt{}), Error);
  Prompt boxes = Prompt::from_text("shape");
  boxes.boxes_xywh.push_back({0.1f, 0.1f, 0.2f, 0.2f});
  EXPECT_THROW(session.add_prompt(0, boxes), Error);
  FrameOutput first = session.add_prompt(0, Prompt::from_text("shape"));
  EXPECT_EQ(first.obj_ids, (std::vector<int64_t>{0, 1, 2}));
  std::vector<int> frames;
  session.propagate({}, [&](const FrameOutput& o) {
    frames.push_back(o.frame_index);
    EXPECT_EQ(o.masks.size(), o.obj_ids.size());
    if (!o.masks.empty()) {
      EXPECT_EQ(o.masks[0].width, 320);
      EXPECT_EQ(o.masks[0].height, 240);
    }
    return true;
  });
  ASSERT_EQ(frames.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(frames[size_t(i)], i);
  EXPECT_EQ(session.decisions().size(), 1u);  // the latest frame's only, by default
  EXPECT_TRUE(session.remove_object(0));
  EXPECT_FALSE(session.remove_object(0));
  auto none = make_blank_frame_source(0, 320, 240);
  EXPECT_THROW(VideoSession(replay->model, *none, load_control_config(replay->fixture + "/config.json")), Error);
}

TEST(ControlConfig, DefaultsAndFixtureValues) {
  ControlConfig d = default_control_config();
  EXPECT_FLOAT_EQ(d.score_threshold_detection, 0.4f);
  EXPECT_FLOAT_EQ(d.new_det_thresh, 0.65f);
  EXPECT_TRUE(d.det_nms_use_iom);
  EXPECT_EQ(d.hotstart_delay, 15);
  EXPECT_EQ(d.max_num_objects, 16);
  EXPECT_EQ(d.bucket_capacity, 16);
  const std::string fixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  if (!std::ifstream(fixture + "/config.json").good()) GTEST_SKIP() << "fixtures not found";
  ControlConfig a = load_control_config(fixture + "/config.json");
  ControlConfig b = load_control_config(fixture + "/video/trace.json");
  EXPECT_EQ(a.max_num_objects, 8);
  EXPECT_EQ(a.bucket_capacity, 4);
  EXPECT_EQ(a.multiplex_count, 4);
  EXPECT_EQ(b.max_num_objects, 8);
  EXPECT_EQ(a.num_maskmem, 7);
  EXPECT_THROW(parse_control_config("{}", "empty"), Error);
  EXPECT_THROW(parse_control_config(
                   "{\"control_plane_hyperparameters\": {\"demo_model(x)\": {\"hotstart_delay\": \"x\"}}}", "bad"),
               Error);
}
