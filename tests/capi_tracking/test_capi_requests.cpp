// The C API on the fixture models, as a careless or hostile caller meets it: refused prompts change
// nothing, closed and freed handles are refused instead of followed, every object says which prompt
// found it; and images (segmux_model_segment_*) give the official image processor's objects.
#include <gtest/gtest.h>
#include <segmux/segmux.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capi_tracking/fixture_model.h"
#include "common/rle_json.h"
#include "pipeline/media/video_io.h"

namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
const std::string kFrames = kFixture + "/video/frames";
const std::string kImageSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-image";

segmux_model* open_model(const std::string& dir) { return segmux::test::open_fixture_model(dir); }

struct Seen {
  std::vector<int> frames;
  std::vector<int64_t> ids;
  std::vector<std::string> prompts;
  std::vector<std::vector<uint8_t>> masks;
};

Seen propagate(segmux_session* s, const segmux_propagate_options* options = nullptr) {
  Seen seen;
  EXPECT_EQ(segmux_session_propagate(
                s, options,
                [](void* user, const segmux_frame* f) {
                  auto& out = *static_cast<Seen*>(user);
                  out.frames.push_back(segmux_frame_index(f));
                  const size_t px = size_t(segmux_frame_width(f)) * size_t(segmux_frame_height(f));
                  for (size_t k = 0; k < segmux_frame_num_objects(f); ++k) {
                    out.ids.push_back(segmux_frame_obj_ids(f)[k]);
                    out.prompts.push_back(segmux_frame_prompt(f, k));
                    out.masks.emplace_back(segmux_frame_mask(f, k), segmux_frame_mask(f, k) + px);
                  }
                  return 1;
                },
                &seen),
            SEGMUX_OK)
      << segmux_last_error();
  return seen;
}

segmux_status add_text(segmux_session* s, const char* text, int frame_index = 0) {
  segmux_prompt p;
  segmux_prompt_init(&p);
  p.text = text;
  p.frame_index = frame_index;
  return segmux_session_add_prompt(s, &p, nullptr);
}

}  // namespace

// A refused prompt (issue 22: a text that is not UTF-8 stayed in the session and every later
// propagation failed with the tokenizer's error) changes nothing: the session then gives exactly what a
// fresh one gives.
TEST(CApiRequests, RefusedPromptsChangeNothing) {
  segmux_model* m = open_model(kFixture);
  ASSERT_NE(m, nullptr);
  segmux_session* s = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(add_text(s, "shape"), SEGMUX_OK) << segmux_last_error();
  const Seen fresh = propagate(s);
  ASSERT_EQ(fresh.frames.size(), 16u);
  ASSERT_FALSE(fresh.ids.empty());
  for (const std::string& p : fresh.prompts) EXPECT_EQ(p, "shape");  // which prompt found each object
  ASSERT_EQ(segmux_session_reset(s), SEGMUX_OK);

  EXPECT_EQ(add_text(s, "sha\xff\xfepe"), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("not valid UTF-8"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(add_text(s, "shape", 16), SEGMUX_ERROR_INVALID_ARGUMENT);  // the video has frames 0..15
  EXPECT_NE(std::string(segmux_last_error()).find("0..15"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(add_text(s, "shape", -1), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_prompt p;
  segmux_prompt_init(&p);
  const float box[4] = {0.1f, 0.1f, 0.2f, 0.2f}, nan_box[4] = {0.1f, std::nanf(""), 0.2f, 0.2f};
  const int label_two = 2, positive = 1;
  p.boxes_xywh = box;
  p.box_labels = &label_two;
  p.num_boxes = 1;
  EXPECT_EQ(segmux_session_add_prompt(s, &p, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  p.box_labels = &positive;
  p.boxes_xywh = nan_box;
  EXPECT_EQ(segmux_session_add_prompt(s, &p, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_prompt_init(&p);
  const float point[2] = {0.5f, 0.5f};
  p.points_xy = point;
  p.point_labels = &positive;
  p.num_points = 1;
  p.obj_id = -7;
  EXPECT_EQ(segmux_session_add_prompt(s, &p, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_propagate_options o;
  segmux_propagate_options_init(&o);
  o.start_frame_index = 1000;
  EXPECT_EQ(segmux_session_propagate_begin(s, &o), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("1000"), std::string::npos) << segmux_last_error();

  ASSERT_EQ(add_text(s, "shape"), SEGMUX_OK) << segmux_last_error();
  const Seen after = propagate(s);
  EXPECT_EQ(after.frames, fresh.frames);
  EXPECT_EQ(after.ids, fresh.ids);
  EXPECT_TRUE(after.masks == fresh.masks);
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}

// A closed session and a freed frame are refused, never followed (issue 22: a Python generator used
// after close crashed the interpreter).
TEST(CApiRequests, ClosedSessionsAndFreedFramesAreRefused) {
  segmux_model* m = open_model(kFixture);
  ASSERT_NE(m, nullptr);
  segmux_session* s = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  segmux_prompt p;
  segmux_prompt_init(&p);
  p.text = "shape";
  segmux_frame* first = nullptr;
  ASSERT_EQ(segmux_session_add_prompt(s, &p, &first), SEGMUX_OK) << segmux_last_error();
  ASSERT_GT(segmux_frame_num_objects(first), 0u);
  EXPECT_STREQ(segmux_frame_prompt(first, 0), "shape");
  EXPECT_EQ(segmux_frame_prompt(first, segmux_frame_num_objects(first)), nullptr);
  segmux_frame* copy = segmux_frame_clone(first);
  ASSERT_NE(copy, nullptr);
  EXPECT_STREQ(segmux_frame_prompt(copy, 0), "shape");
  segmux_frame_free(first);
  segmux_frame_free(first);  // a second free is ignored
  EXPECT_EQ(segmux_frame_num_objects(first), 0u);
  EXPECT_EQ(segmux_frame_mask(first, 0), nullptr);
  EXPECT_GT(segmux_frame_num_objects(copy), 0u);  // the clone lives on
  segmux_frame_free(copy);

  ASSERT_EQ(segmux_session_propagate_begin(s, nullptr), SEGMUX_OK) << segmux_last_error();
  segmux_frame* f = nullptr;
  ASSERT_EQ(segmux_session_next_frame(s, &f), SEGMUX_OK) << segmux_last_error();
  segmux_frame_free(f);
  segmux_session_close(s);  // with the pull still open
  EXPECT_EQ(segmux_session_next_frame(s, &f), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("closed"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(segmux_session_add_prompt(s, &p, nullptr), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_cancel(s), SEGMUX_ERROR_INVALID_ARGUMENT);
  segmux_session_close(s);  // a second close is ignored
  // The model serves a new session, then closes; a closed model is refused.
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_ERROR_INVALID_ARGUMENT);
}

// Images through the C API against the official image processor's outputs on the image fixture
// (the tolerances of tests/track/test_segment.cpp): text cases, box cases, boxes alone; the pixel
// and the file entry points agree; and an image runs while the model has an open session.
TEST(CApiRequests, ImagesMatchTheOfficialImageProcessor) {
  if (!fs::exists(kImageSet + "/image/cases.json")) GTEST_SKIP() << "image fixtures not found";
  nlohmann::json cases;
  std::ifstream(kImageSet + "/image/cases.json") >> cases;
  segmux_model* m = open_model(kImageSet);
  ASSERT_NE(m, nullptr);
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    const std::string name = c["name"], image = kImageSet + "/" + c["image"].get<std::string>();
    const auto img = segmux::pipeline::read_image(image);
    std::vector<std::string> texts;
    std::vector<float> boxes;
    std::vector<int> labels;
    for (const auto& step : c["steps"]) {
      if (step["kind"] == "text") texts.push_back(step["text"]);
      if (step["kind"] != "box") continue;
      const auto& b = step["box_xywh_px"];
      boxes.insert(boxes.end(), {b[0].get<float>() / float(img.width), b[1].get<float>() / float(img.height),
                                 b[2].get<float>() / float(img.width), b[3].get<float>() / float(img.height)});
      labels.push_back(step["label"].get<bool>() ? 1 : 0);
    }
    std::vector<const char*> text_ptrs;
    for (const auto& t : texts) text_ptrs.push_back(t.c_str());
    segmux_image_prompt ip;
    segmux_image_prompt_init(&ip);
    ip.texts = text_ptrs.data();
    ip.num_texts = text_ptrs.size();
    ip.boxes_xywh = boxes.data();
    ip.box_labels = labels.data();
    ip.num_boxes = labels.size();
    segmux_frame* f = nullptr;
    ASSERT_EQ(segmux_model_segment_file(m, image.c_str(), &ip, &f), SEGMUX_OK) << name << ": " << segmux_last_error();
    const auto& ref = c["outputs"];
    const size_t n = segmux_frame_num_objects(f);
    ASSERT_EQ(n, ref["query_indices"].size()) << name;
    ASSERT_EQ(segmux_frame_width(f), img.width);
    for (size_t k = 0; k < n; ++k) {
      EXPECT_EQ(segmux_frame_obj_ids(f)[k], int64_t(k));
      EXPECT_EQ(std::string(segmux_frame_prompt(f, k)), c["text_used"].get<std::string>()) << name;
      EXPECT_NEAR(segmux_frame_scores(f)[k], ref["scores"][k].get<double>(), 1e-4) << name << " object " << k;
      const float* b = segmux_frame_boxes_xywh(f) + 4 * k;
      const double px[4] = {b[0] * img.width, b[1] * img.height, (b[0] + b[2]) * img.width, (b[1] + b[3]) * img.height};
      for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(px[i], ref["boxes_xyxy_px"][k][i].get<double>(), 0.05) << name << " object " << k << " box";
      segmux::pipeline::BinaryMask mask;
      mask.width = img.width;
      mask.height = img.height;
      mask.pixels.assign(segmux_frame_mask(f, k), segmux_frame_mask(f, k) + size_t(img.width) * img.height);
      EXPECT_GE(segmux::test::mask_iou(mask, segmux::test::mask_of(ref["masks_rle"][k])), 0.995)
          << name << " object " << k;
    }
    segmux_frame* g = nullptr;
    ASSERT_EQ(segmux_model_segment_image(m, img.pixels.data(), img.width, img.height, 0, &ip, &g), SEGMUX_OK)
        << segmux_last_error();
    ASSERT_EQ(segmux_frame_num_objects(g), n);
    for (size_t k = 0; k < n; ++k) EXPECT_EQ(segmux_frame_scores(g)[k], segmux_frame_scores(f)[k]) << name;
    segmux_frame_free(f);
    segmux_frame_free(g);
    ++compared;
  }
  EXPECT_GE(compared, 6) << "the fixture's cases";

  segmux_image_prompt ip;
  segmux_image_prompt_init(&ip);
  segmux_frame* f = nullptr;
  const std::string image = kImageSet + "/images/frame00.png";
  EXPECT_EQ(segmux_model_segment_file(m, image.c_str(), &ip, &f), SEGMUX_ERROR_INVALID_ARGUMENT);  // no prompt
  const char* bad_text[1] = {"\xc3"};
  ip.texts = bad_text;
  ip.num_texts = 1;
  EXPECT_EQ(segmux_model_segment_file(m, image.c_str(), &ip, &f), SEGMUX_ERROR_INVALID_ARGUMENT);
  const char* text[1] = {"shape"};
  ip.texts = text;
  EXPECT_EQ(segmux_model_segment_file(m, (kImageSet + "/images/absent.png").c_str(), &ip, &f), SEGMUX_ERROR_NOT_FOUND);
  ip.threshold = 1.5f;
  EXPECT_EQ(segmux_model_segment_file(m, image.c_str(), &ip, &f), SEGMUX_ERROR_INVALID_ARGUMENT);
  ip.threshold = 0.5f;
  segmux_session* s = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(segmux_model_segment_file(m, image.c_str(), &ip, &f), SEGMUX_OK) << segmux_last_error();
  segmux_frame_free(f);
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
}

// Videos and images that do not open: NOT_FOUND when absent, INVALID_ARGUMENT at once for a FIFO
// (issue 22: segmux_session_open_video blocked for ever on one), CORRUPT_FILE when the content does
// not decode; the model then still opens sessions.
TEST(CApiRequests, VideosAndImagesThatDoNotOpenSayWhy) {
  segmux_model* m = open_model(kFixture);
  ASSERT_NE(m, nullptr);
  const fs::path tmp = fs::path(::testing::TempDir()) / ("capi_open_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "notes.mp4") << "not a video\n";
  std::ofstream(tmp / "notes.png") << "not an image\n";
  const std::string fifo = (tmp / "fifo.mp4").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  segmux_session* s = nullptr;
  EXPECT_EQ(segmux_session_open_video(m, (tmp / "absent.mp4").c_str(), &s), SEGMUX_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(segmux_last_error()).find("absent.mp4"), std::string::npos) << segmux_last_error();
  EXPECT_EQ(segmux_session_open_video(m, fifo.c_str(), &s), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(segmux_session_open_video(m, (tmp / "notes.mp4").c_str(), &s), SEGMUX_ERROR_CORRUPT_FILE)
      << segmux_last_error();
  EXPECT_EQ(s, nullptr);
  segmux_image_prompt ip;
  segmux_image_prompt_init(&ip);
  const char* text[1] = {"shape"};
  ip.texts = text;
  ip.num_texts = 1;
  segmux_frame* f = nullptr;
  EXPECT_EQ(segmux_model_segment_file(m, (tmp / "notes.png").c_str(), &ip, &f), SEGMUX_ERROR_CORRUPT_FILE)
      << segmux_last_error();
  EXPECT_EQ(segmux_model_segment_file(m, fifo.c_str(), &ip, &f), SEGMUX_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  segmux_session_close(s);
  EXPECT_EQ(segmux_model_close(m), SEGMUX_OK);
  fs::remove_all(tmp);
}

// After a removal the official predictor does not run the model again: the next propagation fetches
// the kept outputs without the removed object (tests/fixtures/sam31-tiny-remove). The C API session
// keeps its outputs for that, so its frames are the official ones.
TEST(CApiRequests, PropagationAfterARemovalIsTheOfficialFetch) {
  const nlohmann::json trace = nlohmann::json::parse(
      std::ifstream(std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-remove/video/trace.json"));
  const nlohmann::json& requests = trace.at("requests");
  ASSERT_EQ(requests[0].at("type"), "add_prompt");
  ASSERT_EQ(requests[2].at("type"), "remove_object");
  ASSERT_EQ(requests[3].at("type"), "propagate_in_video");
  ASSERT_EQ(requests[3].at("propagation_direction"), "forward");
  segmux_model* m = open_model(kFixture);
  ASSERT_NE(m, nullptr);
  segmux_session* s = nullptr;
  ASSERT_EQ(segmux_session_open_video(m, kFrames.c_str(), &s), SEGMUX_OK) << segmux_last_error();
  ASSERT_EQ(add_text(s, requests[0].at("text").get<std::string>().c_str(), requests[0].at("frame_index")), SEGMUX_OK);
  segmux_propagate_options forward;
  segmux_propagate_options_init(&forward);
  forward.direction = SEGMUX_FORWARD;
  propagate(s, &forward);
  int removed = 0;
  ASSERT_EQ(segmux_session_remove_object(s, requests[2].at("obj_id").get<int64_t>(), &removed), SEGMUX_OK);
  EXPECT_EQ(removed, 1);
  const Seen seen = propagate(s, &forward);
  // The official yields of the propagation after the removal, frame by frame, object by object.
  size_t k = 0;
  const nlohmann::json& yields = requests[3].at("yields");
  ASSERT_EQ(seen.frames.size(), yields.size());
  for (const nlohmann::json& y : yields) {
    for (size_t j = 0; j < y.at("obj_ids").size(); ++j, ++k) {
      ASSERT_LT(k, seen.ids.size());
      EXPECT_EQ(seen.ids[k], y["obj_ids"][j].get<int64_t>()) << "frame " << y["frame_index"];
      const segmux::pipeline::BinaryMask want = segmux::test::mask_of(y["masks_rle"][j]);
      segmux::pipeline::BinaryMask got = want;
      got.pixels.assign(seen.masks[k].begin(), seen.masks[k].end());
      EXPECT_GE(segmux::test::mask_iou(got, want), 0.99) << "frame " << y["frame_index"] << " object " << j;
    }
  }
  EXPECT_EQ(k, seen.ids.size());
  segmux_session_close(s);
  segmux_model_close(m);
}
