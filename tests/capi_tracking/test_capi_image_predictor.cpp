// The C API's interactive image predictor (segmux_image_predictor_*) against the official
// SAM3InteractiveImagePredictor goldens of tests/fixtures/sam31-tiny-sam1, its low-res logits fed back,
// the model held while it is open, and the refusals of bad prompts.
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "capi_tracking/fixture_model.h"
#include "io/safetensors.h"

namespace {

const std::string kSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-sam1";

class CapiImagePredictor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kSet + "/cases.json")) GTEST_SKIP() << "sam31-tiny-sam1 fixtures not found";
    model_ = segmux::test::open_fixture_model(kSet);
    ASSERT_NE(model_, nullptr);
  }
  void TearDown() override { segmux_model_close(model_); }
  segmux_model* model_ = nullptr;
};

}  // namespace

TEST_F(CapiImagePredictor, PointThenFedBackLogitsEqualTheOfficial) {
  segmux_image_predictor* p = nullptr;
  ASSERT_EQ(segmux_image_predictor_open_file(model_, (kSet + "/images/frame00.png").c_str(), &p), SEGMUX_OK)
      << segmux_last_error();
  // While it is open, the model serves others beside it (each on a model session of its own) but does not close.
  segmux_image_predictor* second = nullptr;
  EXPECT_EQ(segmux_image_predictor_open_file(model_, (kSet + "/images/frame00.png").c_str(), &second), SEGMUX_OK)
      << segmux_last_error();
  EXPECT_EQ(segmux_image_predictor_close(second), SEGMUX_OK);
  EXPECT_EQ(segmux_model_close(model_), SEGMUX_ERROR_BUSY);

  const segmux::TensorFile ref = segmux::read_safetensors(kSet + "/cases/frame00_point_multimask.safetensors");
  segmux_predict_prompt q;
  segmux_predict_prompt_init(&q);
  const float xy[2] = {163.f, 79.f};
  const int label = 1;
  q.points_xy = xy;
  q.point_labels = &label;
  q.num_points = 1;
  segmux_prediction* r = nullptr;
  ASSERT_EQ(segmux_image_predictor_predict(p, &q, &r), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_prediction_count(r), 3u);
  EXPECT_EQ(segmux_prediction_width(r), 320);
  EXPECT_EQ(segmux_prediction_height(r), 240);
  size_t best = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(segmux_prediction_score(r, i), ref.at("out.scores").data<float>()[i], 2e-4);
    if (segmux_prediction_score(r, i) > segmux_prediction_score(r, best)) best = i;
    EXPECT_NE(segmux_prediction_mask(r, i), nullptr);
    EXPECT_EQ(segmux_prediction_logits(r, i), nullptr);
  }
  EXPECT_EQ(segmux_prediction_mask(r, 3), nullptr);
  const int s = segmux_prediction_low_res_size(r);
  ASSERT_EQ(s, ref.at("out.low_res_logits").dim(1));
  std::vector<float> feed(segmux_prediction_low_res(r, best), segmux_prediction_low_res(r, best) + s * s);
  segmux_prediction_free(r);

  // The notebook's refinement with our own logits as mask_input.
  const segmux::TensorFile ref2 = segmux::read_safetensors(kSet + "/cases/frame00_refine_mask_input.safetensors");
  const float xy2[4] = {163.f, 79.f, 150.f, 60.f};
  const int labels2[2] = {1, 1};
  q.points_xy = xy2;
  q.point_labels = labels2;
  q.num_points = 2;
  q.mask_input = feed.data();
  q.mask_input_size = s;
  q.multimask_output = 0;
  ASSERT_EQ(segmux_image_predictor_predict(p, &q, &r), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_prediction_count(r), 1u);
  EXPECT_NEAR(segmux_prediction_score(r, 0), ref2.at("out.scores").data<float>()[0], 2e-4);
  segmux_prediction_free(r);

  // Bad prompts: named, nothing returned.
  q.mask_input_size = s / 2;
  EXPECT_EQ(segmux_image_predictor_predict(p, &q, &r), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("mask_input has shape"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(r, nullptr);
  q.mask_input = nullptr;
  const float box[4] = {10.f, 10.f, 500.f, 100.f};
  q.box_xyxy = box;
  EXPECT_EQ(segmux_image_predictor_predict(p, &q, &r), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("outside the 320x240 image"), std::string::npos);
  q.box_xyxy = nullptr;
  const int bad_labels[2] = {1, 5};
  q.point_labels = bad_labels;
  EXPECT_EQ(segmux_image_predictor_predict(p, &q, &r), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("label 5"), std::string::npos);

  EXPECT_EQ(segmux_image_predictor_close(p), SEGMUX_OK);
  EXPECT_EQ(segmux_image_predictor_close(p), SEGMUX_ERROR_INVALID_ARGUMENT);  // already closed: refused
  segmux_prediction_free(r);                                                  // NULL / foreign: nothing
}
