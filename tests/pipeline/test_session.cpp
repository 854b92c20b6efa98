// The session API on the replayed official run.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "common/replayed_session.h"
#include "pipeline/predictor/session_api.h"
#include "verify/replay_backend.h"
#include "verify/sam31/fixture_config.h"

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
  EXPECT_THROW(
      VideoSession(replay->model, *none, verify::load_fixture_control_config(replay->fixture + "/config.json")), Error);
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
  ControlConfig a = segmux::verify::load_fixture_control_config(fixture + "/config.json");
  ControlConfig b = segmux::verify::load_fixture_control_config(fixture + "/video/trace.json");
  EXPECT_EQ(a.max_num_objects, 8);
  EXPECT_EQ(a.bucket_capacity, 4);
  EXPECT_EQ(a.multiplex_count, 4);
  EXPECT_EQ(b.max_num_objects, 8);
  EXPECT_EQ(a.num_maskmem, 7);
  EXPECT_THROW(segmux::verify::parse_fixture_control_config("{}", "empty"), Error);
  EXPECT_THROW(segmux::verify::parse_fixture_control_config(
                   "{\"control_plane_hyperparameters\": {\"demo_model(x)\": {\"hotstart_delay\": \"x\"}}}", "bad"),
               Error);
}

// The product's control-plane settings are a flat JSON by field name over the official defaults; a
// fixture's config.json is refused with the command that converts it, whose output reads back equal.
TEST(ControlConfig, FlatSettingsByFieldName) {
  const ControlConfig c = parse_control_config(R"({"new_det_thresh": 0.7, "hotstart_delay": 0,
                                                  "det_nms_use_iom": false})",
                                               "flat");
  EXPECT_FLOAT_EQ(c.new_det_thresh, 0.7f);
  EXPECT_EQ(c.hotstart_delay, 0);
  EXPECT_FALSE(c.det_nms_use_iom);
  EXPECT_EQ(c.max_num_objects, default_control_config().max_num_objects);
  auto message = [](const std::string& text) {
    try {
      parse_control_config(text, "settings.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"new_det_thresh": "high"})").find("'new_det_thresh' must be a finite number"),
            std::string::npos);
  EXPECT_NE(message(R"({"hotstart_delay": 1e20})").find("'hotstart_delay' must be an integer"), std::string::npos);
  EXPECT_NE(message(R"({"new_det_thresh_typo": 1})").find("unknown control-plane setting 'new_det_thresh_typo'"),
            std::string::npos);
  EXPECT_NE(message(R"({"bucket_capacity": 0})").find("bucket capacity 0"), std::string::npos);
  const std::string fixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  if (!std::ifstream(fixture + "/config.json").good()) GTEST_SKIP() << "fixtures not found";
  EXPECT_THROW(load_control_config(fixture + "/config.json"), Error);
  std::ifstream f(fixture + "/video/trace.json");
  const std::string trace((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(message(trace).find("convert it with `segmux fixture-config --control settings.json"), std::string::npos);
  const ControlConfig a = segmux::verify::load_fixture_control_config(fixture + "/config.json");
  const std::string flat = control_config_to_json(a);
  EXPECT_EQ(control_config_to_json(parse_control_config(flat, "converted")), flat);
  EXPECT_EQ(parse_control_config(flat, "converted").bucket_capacity, 4);
}
