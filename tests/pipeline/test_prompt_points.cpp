// Session-API point prompts (and the object_box extension) to the tracker's model-input pixels, and the errors bad ones
// get.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "pipeline/predictor/prompt_points.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

Prompt clicks(std::vector<std::array<float, 2>> pts, std::vector<int> labels) {
  Prompt p;
  p.obj_id = 3;
  p.points_xy = std::move(pts);
  p.point_labels = std::move(labels);
  return p;
}

std::string error_of(const Prompt& p) {
  try {
    tracker_point_inputs(p, 100);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PromptPoints, BoxCornersComeFirstInModelInputPixels) {
  Prompt p = clicks({{0.5f, 0.25f}}, {0});
  p.object_box = std::array<float, 4>{0.1f, 0.2f, 0.3f, 0.4f};  // the segmux extension
  PointInputs in = tracker_point_inputs(p, 100);
  ASSERT_EQ(in.labels, (std::vector<int64_t>{2, 3, 0}));
  const std::vector<float> want = {10.f, 20.f, 40.f, 60.f, 50.f, 25.f};
  ASSERT_EQ(in.xy.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(in.xy[i], want[i], 1e-4) << i;
  EXPECT_TRUE(is_tracker_prompt(p));
  EXPECT_FALSE(is_tracker_prompt(Prompt::from_text("dog")));
}

// Official add_prompt: only points (and segmux's object_box extension) go to the tracker; boxes are
// the detector's exemplars even with an obj_id, which is then unused.
TEST(PromptPoints, BoxesWithAnObjIdAreNotATrackerPrompt) {
  Prompt p;
  p.obj_id = 2;
  p.boxes_xywh = {{0.1f, 0.2f, 0.3f, 0.4f}};
  p.box_labels = {1};
  EXPECT_FALSE(is_tracker_prompt(p));
  p.points_xy = {{0.5f, 0.5f}};
  p.point_labels = {1};
  EXPECT_TRUE(is_tracker_prompt(p));
}

TEST(PromptPoints, BadPromptsNameTheProblem) {
  EXPECT_NE(error_of(clicks({{1.5f, 0.2f}}, {1})).find("point 0 (1.5, 0.2) is outside the frame"), std::string::npos);
  EXPECT_NE(error_of(clicks({{0.5f, 0.2f}}, {5})).find("has label 5"), std::string::npos);
  EXPECT_NE(error_of(clicks({{0.5f, 0.2f}}, {})).find("1 points but 0 point labels"), std::string::npos);
  Prompt no_id = clicks({{0.5f, 0.2f}}, {1});
  no_id.obj_id.reset();
  EXPECT_NE(error_of(no_id).find("need an obj_id"), std::string::npos);
  Prompt both = clicks({{0.5f, 0.2f}}, {1});
  both.text = "dog";
  EXPECT_NE(error_of(both).find("not both"), std::string::npos);
  Prompt empty_box = clicks({}, {});
  empty_box.object_box = std::array<float, 4>{0.1f, 0.1f, 0.f, 0.2f};
  EXPECT_NE(error_of(empty_box).find("is empty or outside the frame"), std::string::npos);
  // Official add_prompt: points exclude bounding_boxes (those always go to the detector).
  Prompt with_boxes = clicks({{0.5f, 0.2f}}, {1});
  with_boxes.boxes_xywh = {{0.1f, 0.1f, 0.2f, 0.2f}};
  with_boxes.box_labels = {1};
  EXPECT_NE(error_of(with_boxes).find("points exclude 'bounding_boxes'"), std::string::npos);
  EXPECT_NE(error_of(clicks({}, {})).find("without points"), std::string::npos);
}

}  // namespace
