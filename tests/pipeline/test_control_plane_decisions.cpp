// The control plane's per-frame decisions (control_plane_frame.h) as plain functions, without a
// backend: association, hot start, occlusion choice, object-count cap, metadata compaction.
#include <gtest/gtest.h>

#include "pipeline/predictor/control_plane_frame.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {
constexpr int kSize = 16;

// Logits +5 inside [y0,y1)x[x0,x1), -5 elsewhere.
void paint(float* m, std::array<int, 4> r) {
  for (int y = 0; y < kSize; ++y)
    for (int x = 0; x < kSize; ++x) m[y * kSize + x] = (y >= r[0] && y < r[2] && x >= r[1] && x < r[3]) ? 5.f : -5.f;
}

MaskStack squares(const std::vector<std::array<int, 4>>& rects) {
  MaskStack m(int(rects.size()), kSize, kSize);
  for (size_t i = 0; i < rects.size(); ++i) paint(m.mask(int(i)), rects[i]);
  return m;
}

Detections detections(const std::vector<std::array<int, 4>>& rects, const std::vector<float>& scores) {
  Detections d;
  d.scores = scores;
  d.keep.assign(scores.size(), true);
  d.masks = squares(rects);
  return d;
}

Tracks tracks(const std::vector<std::array<int, 4>>& rects) {
  Tracks t;
  for (size_t i = 0; i < rects.size(); ++i) t.ids.push_back(int64_t(10 + i));
  t.score_logits.assign(rects.size(), 5.f);
  t.masks = squares(rects);
  return t;
}
}  // namespace

TEST(ControlPlaneDecisions, MatrixChecksItsSizeAndCounts) {
  EXPECT_THROW(Matrix<float>::adopt({1.f, 2.f, 3.f}, 2, 2), Error);
  auto m = Matrix<int>::adopt({1, 0, 1, 1, 1, 0}, 2, 3);
  EXPECT_EQ(m(1, 0), 1);
  EXPECT_EQ(m.count_in_row(0, [](int v) { return v != 0; }), 2);
  EXPECT_EQ(m.count_in_col(2, [](int v) { return v != 0; }), 1);
  EXPECT_EQ(std::move(m).release(), (std::vector<int>{1, 0, 1, 1, 1, 0}));
}

TEST(ControlPlaneDecisions, WithoutTracksConfidentKeptDetectionsAreNew) {
  ControlConfig cfg;
  Detections d = detections({{0, 0, 4, 4}, {8, 8, 12, 12}, {0, 8, 4, 12}}, {0.9f, 0.5f, 0.7f});
  d.keep[2] = false;
  Association a = associate(d, tracks({}), cfg);
  EXPECT_EQ(a.new_dets, (std::vector<int>{0}));
  EXPECT_TRUE(a.recondition_candidates.empty());
}

TEST(ControlPlaneDecisions, WithoutDetectionsEveryTrackIsUnmatchedEvenAnEmptyOne) {
  ControlConfig cfg;
  Tracks t = tracks({{0, 0, 4, 4}, {8, 8, 12, 12}});
  std::fill(t.masks.mask(1), t.masks.mask(1) + t.masks.plane(), -5.f);
  Association a = associate(detections({}, {}), t, cfg);
  EXPECT_EQ(a.trk_unmatched, (std::vector<bool>{true, true}));
  EXPECT_EQ(a.trk_nonempty, (std::vector<bool>{true, false}));
}

TEST(ControlPlaneDecisions, AmbiguousPairsAreClearedAfterUnmatchedAndNewAreDecided) {
  ControlConfig cfg;  // IoM association, reconditioning threshold 0.5
  // Detection 0 covers both tracks (IoM 1 with each): ambiguous, so it matches none of them, yet the
  // tracks count as matched and the detection is not new. Detection 1 matches track 2 alone.
  Detections d = detections({{0, 0, 8, 16}, {12, 12, 16, 16}}, {0.9f, 0.95f});
  Tracks t = tracks({{0, 0, 4, 4}, {4, 8, 8, 12}, {12, 12, 16, 16}});
  Association a = associate(d, t, cfg);
  EXPECT_EQ(a.trk_unmatched, (std::vector<bool>{false, false, false}));
  EXPECT_TRUE(a.new_dets.empty());
  for (int j = 0; j < 3; ++j) EXPECT_EQ(a.matched(0, j), 0) << j;
  EXPECT_EQ(a.matched(1, 2), 1);
  EXPECT_TRUE(a.track_matched(2));
  EXPECT_FALSE(a.track_matched(0));
  EXPECT_EQ(a.recondition_candidates, (std::vector<std::pair<int64_t, int>>{{12, 1}}));
}

TEST(ControlPlaneDecisions, HotStartRemovesUnmatchedYoungTracksOnly) {
  ControlConfig cfg;
  cfg.hotstart_delay = 5;
  cfg.hotstart_unmatch_thresh = 2;
  Association a;
  a.matched = Matrix<uint8_t>(0, 2);
  a.trk_nonempty = {true, true};
  a.trk_unmatched = {true, true};
  HotstartMetadata meta;
  meta.obj_first_frame = {0, 8};  // on frame 10: track 0 is past the hot-start window, track 1 within
  meta.consecutive_unmatch_count = {5, 1};
  meta.trk_keep_alive = {1, 0};
  meta.last_occluded = {-1, -1};
  meta.overlap_pair_counts = {0, 0, 0, 0};
  HotstartChoice h = decide_hotstart(meta, a, 10, false, cfg);
  EXPECT_EQ(meta.consecutive_unmatch_count, (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(meta.trk_keep_alive, (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(h.remove, (std::vector<bool>{false, true}));
  EXPECT_EQ(h.suppress, (std::vector<bool>{true, false}));  // not by keep-alive when removed by unmatch
}

TEST(ControlPlaneDecisions, OcclusionChoiceHidesTheMoreRecentlyOccludedTrack) {
  ControlConfig cfg;
  MaskStack m = squares({{0, 0, 8, 8}, {0, 0, 8, 8}, {10, 10, 14, 14}});
  EXPECT_EQ(choose_occlusion_suppression(m, {3, 6, 1}, false, cfg), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(choose_occlusion_suppression(m, {3, 6, 1}, true, cfg), (std::vector<bool>{true, false, false}));
  // A never-occluded track suppresses the other only when allowed to.
  EXPECT_EQ(choose_occlusion_suppression(m, {kNeverOccluded, 6, 1}, false, cfg),
            (std::vector<bool>{false, false, false}));
  cfg.allow_unoccluded_to_suppress = true;
  EXPECT_EQ(choose_occlusion_suppression(m, {kNeverOccluded, 6, 1}, false, cfg),
            (std::vector<bool>{false, true, false}));
}

TEST(ControlPlaneDecisions, ObjectCapKeepsTheBestNewDetectionsAndRemovalsLeaveTheList) {
  ControlConfig cfg;
  cfg.max_num_objects = 3;
  Detections d = detections({{0, 0, 2, 2}, {4, 4, 6, 6}, {8, 8, 10, 10}}, {0.7f, 0.9f, 0.8f});
  Tracks t = tracks({{12, 12, 14, 14}});
  Association a;
  a.new_dets = {0, 1, 2};
  HotstartChoice h{{true}, {false}};
  ObjectChanges c = decide_object_changes(d, t, a, h, {10}, 10, cfg);
  EXPECT_EQ(c.new_dets, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.new_ids, (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(c.dropped, 1);
  EXPECT_EQ(c.removed, (std::vector<int64_t>{10}));
  EXPECT_EQ(c.ids_after, (std::vector<int64_t>{11, 12}));
}

TEST(ControlPlaneDecisions, CompactedMetadataDropsRemovedRowsAndAddsNewObjects) {
  ControlConfig cfg;
  cfg.init_trk_keep_alive = 2;
  HotstartMetadata meta;
  meta.obj_first_frame = {0, 1, 2};
  meta.consecutive_unmatch_count = {0, 1, 2};
  meta.trk_keep_alive = {3, 4, 5};
  meta.last_occluded = {-1, 4, -1};
  meta.overlap_pair_counts = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  HotstartMetadata m = compact_metadata(meta, {false, true, false}, 1, 9, cfg);
  EXPECT_EQ(m.obj_first_frame, (std::vector<int64_t>{0, 2, 9}));
  EXPECT_EQ(m.trk_keep_alive, (std::vector<int64_t>{3, 5, 2}));
  EXPECT_EQ(m.last_occluded, (std::vector<int64_t>{-1, -1, kNeverOccluded}));
  EXPECT_EQ(m.overlap_pair_counts, (std::vector<int64_t>{0, 2, 0, 6, 8, 0, 0, 0, 0}));
}

TEST(ControlPlaneDecisions, DetectionsKeepConfidentQueriesAwayFromTheBorderFirst) {
  ControlConfig cfg;
  DetectorOutput out;
  out.pred_logits = Tensor::from_vector<float>({3}, {-3.f, 3.f, 3.f});
  out.boxes_xyxy = Tensor::from_vector<float>(
      {3, 4}, {0.4f, 0.4f, 0.6f, 0.6f, 0.f, 0.f, 0.04f, 0.04f, 0.2f, 0.2f, 0.5f, 0.5f});  // query 1 at the border
  out.mask_logits = squares({{6, 6, 10, 10}, {0, 0, 1, 1}, {3, 3, 8, 8}}).to_tensor();
  Detections d = select_detections(out, 0, kSize, cfg);
  EXPECT_EQ(d.kept_queries, (std::vector<int>{2}));
  ASSERT_EQ(d.count(), 3);
  EXPECT_EQ(d.order[0], 2);
  EXPECT_EQ(d.keep, (std::vector<bool>{true, false, false}));
  EXPECT_FLOAT_EQ(d.scores[0], sigmoidf(3.f));
  EXPECT_THROW(select_detections(out, 0, 2 * kSize, cfg), Error);  // masks of another size
}

// A config built in code (not loaded from a file) with a batch size of 0 used to make propagate() loop
// forever; the control plane now refuses it like the loader does.
TEST(ControlPlaneDecisions, ConfigThatCannotFlushIsRefused) {
  ControlConfig c = default_control_config();
  EXPECT_NO_THROW(validate_control_config(c, "test config"));
  c.postprocess_batch_size = 0;
  try {
    validate_control_config(c, "test config");
    FAIL() << "a batch size of 0 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("postprocess_batch_size"), std::string::npos) << e.what();
  }
  c = default_control_config();
  c.hotstart_delay = -1;
  EXPECT_THROW(validate_control_config(c, "test config"), Error);
}
