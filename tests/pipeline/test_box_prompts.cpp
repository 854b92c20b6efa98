// add_prompt's box exemplars (session API): conversion as the official add_prompt does it, and the
// errors that name the box at fault; a model without geometry refuses them instead of ignoring them.
#include <gtest/gtest.h>

#include <fstream>

#include "common/replayed_session.h"
#include "pipeline/predictor/box_prompts.h"
#include "pipeline/predictor/session_api.h"
#include "verify/replay_backend.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {
Prompt with_boxes(std::vector<std::array<float, 4>> boxes, std::vector<int> labels) {
  Prompt p;
  p.boxes_xywh = std::move(boxes);
  p.box_labels = std::move(labels);
  return p;
}
void expect_error(const Prompt& p, const std::string& words) {
  try {
    prompt_box_exemplars(p);
    ADD_FAILURE() << "no error for " << words;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(BoxPrompts, ConvertedAsTheOfficialAddPrompt) {
  // The text_posbox case of tests/fixtures/sam31-tiny-prompts (px 133, 54, 60, 50 of 320x240).
  auto b = prompt_box_exemplars(with_boxes({{0.415625f, 0.225f, 0.1875f, 0.20833333f}, {0, 0, 1, 1}}, {1, 0}));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_FLOAT_EQ(float(b[0].cx), 0.415625f + 0.5f * 0.1875f);
  EXPECT_FLOAT_EQ(float(b[0].cy), 0.225f + 0.5f * 0.20833333f);
  EXPECT_TRUE(b[0].positive);
  EXPECT_FALSE(b[1].positive);
  EXPECT_TRUE(prompt_box_exemplars(Prompt::from_text("dog")).empty());
}

TEST(BoxPrompts, BadBoxesNameTheBox) {
  expect_error(with_boxes({{0.1f, 0.1f, 0.2f, 0.2f}}, {}), "1 boxes but 0 box labels");
  expect_error(with_boxes({{0.1f, 0.1f, 0.2f, 0.2f}}, {2}), "box 0 has label 2");
  expect_error(with_boxes({{0.1f, 0.1f, 0.2f, 0.2f}, {0.1f, 0.1f, 0.0f, 0.2f}}, {1, 1}), "box 1");
  expect_error(with_boxes({{0.1f, 0.1f, 0.0f, 0.2f}}, {1}), "is empty");
  expect_error(with_boxes({{0.9f, 0.1f, 0.2f, 0.2f}}, {1}), "not inside the frame");
  expect_error(with_boxes({{-0.1f, 0.1f, 0.2f, 0.2f}}, {0}), "not inside the frame");
}

TEST(BoxPrompts, SessionRefusesWhatTheModelCannotDo) {
  auto replay = segmux::test::replayed_session();  // recorded text run: no geometry
  if (!replay) GTEST_SKIP() << "fixtures not found";
  VideoSession& session = replay->session;
  Prompt p = with_boxes({{0.1f, 0.1f, 0.2f, 0.2f}}, {1});
  try {
    session.add_prompt(0, p);
    ADD_FAILURE() << "boxes were ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not take box exemplars"), std::string::npos) << e.what();
  }
  p.points_xy.push_back({0.5f, 0.5f});
  p.point_labels.push_back(1);
  EXPECT_THROW(session.add_prompt(0, p), Error);
}
