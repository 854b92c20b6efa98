// The DAVIS measures against values worked out by hand or by an independent brute force written here
// (boundaries of rectangles are known outlines; F by nearest-distance search instead of dilation).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "pipeline/media/label_png.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/eval_inputs.h"
#include "pipeline/outputs/eval_metrics.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

// A filled rectangle [x0, x1] x [y0, y1] (inclusive) in a w x h mask.
BinaryMask rect(int w, int h, int x0, int y0, int x1, int y1) {
  BinaryMask m(h, w);
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) m.at(y, x) = 1;
  return m;
}

// seg2bmap of a filled rectangle away from the image's right and lower edges is the outline of the
// rectangle grown by one pixel up and left: its right column and last row, the column left of it and
// the row above it.
std::vector<std::pair<int, int>> rect_boundary(int x0, int y0, int x1, int y1) {
  std::vector<std::pair<int, int>> b;
  for (int y = y0 - 1; y <= y1; ++y)
    for (int x = x0 - 1; x <= x1; ++x)
      if (x == x0 - 1 || x == x1 || y == y0 - 1 || y == y1) b.emplace_back(x, y);
  return b;
}

// F by definition: a boundary pixel matches when the other boundary has a pixel within distance r.
double brute_force_f(const std::vector<std::pair<int, int>>& a, const std::vector<std::pair<int, int>>& b, int r) {
  auto matched = [&](const std::vector<std::pair<int, int>>& from, const std::vector<std::pair<int, int>>& to) {
    int n = 0;
    for (auto [x, y] : from) {
      bool hit = false;
      for (auto [u, v] : to) hit = hit || (x - u) * (x - u) + (y - v) * (y - v) <= r * r;
      n += hit;
    }
    return double(n) / double(from.size());
  };
  const double p = matched(a, b), rc = matched(b, a);
  return p + rc == 0 ? 0 : 2 * p * rc / (p + rc);
}

}  // namespace

TEST(EvalMetrics, BoundaryMapOfRectangleIsItsOutline) {
  const BinaryMask b = boundary_map(rect(40, 30, 10, 5, 19, 14));
  BinaryMask expected(30, 40);
  for (auto [x, y] : rect_boundary(10, 5, 19, 14)) expected.at(y, x) = 1;
  EXPECT_EQ(b.pixels, expected.pixels);
}

TEST(EvalMetrics, BoundaryMapAtTheImageEdges) {
  // seg2bmap compares the last row with its right neighbour only and the last column with its lower
  // neighbour only: the image edge is no boundary. A mask filling the image has none.
  BinaryMask full(4, 5);
  std::fill(full.pixels.begin(), full.pixels.end(), 1);
  EXPECT_EQ(boundary_map(full).area(), 0);
  // A rectangle touching the right edge (x 3..5, y 1..2 of 6 x 5): its outline without (5, 1).
  BinaryMask expected(5, 6);
  for (auto [x, y] : rect_boundary(3, 1, 5, 2))
    if (!(x == 5 && y == 1)) expected.at(y, x) = 1;
  EXPECT_EQ(boundary_map(rect(6, 5, 3, 1, 5, 2)).pixels, expected.pixels);
}

TEST(EvalMetrics, RegionSimilarityByHand) {
  const BinaryMask gt = rect(100, 100, 10, 10, 29, 29);                                    // 20 x 20
  EXPECT_DOUBLE_EQ(region_similarity(rect(100, 100, 13, 10, 32, 29), gt), 340.0 / 460.0);  // shift 3
  EXPECT_DOUBLE_EQ(region_similarity(gt, gt), 1.0);
  EXPECT_DOUBLE_EQ(region_similarity(BinaryMask(100, 100), gt), 0.0);
  EXPECT_DOUBLE_EQ(region_similarity(BinaryMask(100, 100), BinaryMask(100, 100)), 1.0);  // DAVIS: both empty
  // Void pixels leave both sides: the 3 columns only the prediction covers become void.
  BinaryMask void_px = rect(100, 100, 30, 10, 32, 29);
  EXPECT_DOUBLE_EQ(region_similarity(rect(100, 100, 13, 10, 32, 29), gt, &void_px), 340.0 / 400.0);
}

TEST(EvalMetrics, BoundaryMeasureByHand) {
  const BinaryMask gt = rect(100, 100, 10, 10, 29, 29);
  // 1-pixel tolerance, shifted 3: of each 80-pixel outline, 19 + 19 on the rows and 2 on the near
  // column are within 1 pixel of the other outline: precision = recall = 40 / 80.
  EXPECT_DOUBLE_EQ(boundary_measure(rect(100, 100, 13, 10, 32, 29), gt, nullptr, 1.0), 0.5);
  // Shifted 1 with the default tolerance (ceil(0.008 * 141.4) = 2 pixels): every pixel matches.
  EXPECT_DOUBLE_EQ(boundary_measure(rect(100, 100, 11, 10, 30, 29), gt), 1.0);
  // Far apart: nothing matches.
  EXPECT_DOUBLE_EQ(boundary_measure(rect(100, 100, 60, 60, 79, 79), gt), 0.0);
  // One side empty: 0; both empty: 1 (DAVIS).
  EXPECT_DOUBLE_EQ(boundary_measure(BinaryMask(100, 100), gt), 0.0);
  EXPECT_DOUBLE_EQ(boundary_measure(gt, BinaryMask(100, 100)), 0.0);
  EXPECT_DOUBLE_EQ(boundary_measure(BinaryMask(100, 100), BinaryMask(100, 100)), 1.0);
}

TEST(EvalMetrics, BoundaryMeasureMatchesBruteForce) {
  // Rectangles of several sizes and offsets against the definition, at the default tolerance on a
  // 160 x 120 image (ceil(0.008 * 200) = 2 pixels) and at explicit radii.
  struct Case {
    int ax0, ay0, ax1, ay1, bx0, by0, bx1, by1;
    double bound_th;
    int radius;
  };
  const Case cases[] = {{10, 10, 49, 39, 12, 11, 51, 40, kDavisBoundTh, 2},
                        {10, 10, 49, 39, 14, 13, 40, 30, kDavisBoundTh, 2},
                        {20, 30, 60, 70, 25, 36, 60, 70, 3.0, 3},
                        {20, 30, 60, 70, 30, 40, 90, 100, 5.0, 5},
                        {5, 5, 15, 15, 9, 2, 30, 12, 1.0, 1}};
  for (const Case& c : cases) {
    const double expected =
        brute_force_f(rect_boundary(c.ax0, c.ay0, c.ax1, c.ay1), rect_boundary(c.bx0, c.by0, c.bx1, c.by1), c.radius);
    EXPECT_NEAR(boundary_measure(rect(160, 120, c.ax0, c.ay0, c.ax1, c.ay1), rect(160, 120, c.bx0, c.by0, c.bx1, c.by1),
                                 nullptr, c.bound_th),
                expected, 1e-12)
        << c.ax0 << " " << c.bx0 << " r=" << c.radius;
  }
}

TEST(EvalMetrics, SeriesStatisticsByHand) {
  // Bins of 8 frames: round(linspace(1, 8, 5)) - 1 = 0, 2, 4, 5, 7 -> first bin frames 0..2, last 5..7.
  const SeriesStats s = series_stats({1, 1, 1, 1, 0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(s.mean, 0.5);
  EXPECT_DOUBLE_EQ(s.recall, 0.5);
  EXPECT_DOUBLE_EQ(s.decay, 1.0);
  const SeriesStats t = series_stats({0.4, 0.6, 0.6, 1.0});
  EXPECT_DOUBLE_EQ(t.mean, 0.65);
  EXPECT_DOUBLE_EQ(t.recall, 0.75);
  // n = 4: round(linspace(1, 4, 5)) - 1 = 0, 1, 2, 2, 3 (1.75 -> 2, 2.5 -> 3 as numpy with its 1e-10):
  // first bin frames 0..1, last bin frames 2..3.
  EXPECT_NEAR(t.decay, (0.4 + 0.6) / 2 - (0.6 + 1.0) / 2, 1e-12);
}

TEST(EvalMetrics, BestAssignmentMaximisesTheSum) {
  EXPECT_EQ(best_assignment({{0.1, 0.9}, {0.8, 0.7}}), (std::vector<int>{1, 0}));
  EXPECT_EQ(best_assignment({{0.9, 0.8}, {0.85, 0.1}}), (std::vector<int>{1, 0}));  // greedy would take 0.9
  EXPECT_EQ(best_assignment({{0.5}, {0.7}, {0.1}}), (std::vector<int>{-1, 0, -1}));
  EXPECT_EQ(best_assignment({{0.1, 0.2, 0.9}}), (std::vector<int>{2}));
}

namespace {
MaskVideo video_of(const std::map<int64_t, std::vector<BinaryMask>>& objects, int frames) {
  MaskVideo v;
  v.width = objects.begin()->second.front().width;
  v.height = objects.begin()->second.front().height;
  for (int f = 0; f < frames; ++f) v.frames.push_back(f);
  for (const auto& [id, masks] : objects)
    for (size_t f = 0; f < masks.size(); ++f) v.objects[id][int(f)] = rle_encode(masks[f]);
  return v;
}
}  // namespace

TEST(EvalMetrics, VideoPairsObjectsByBestJOrById) {
  const BinaryMask a = rect(100, 100, 10, 10, 29, 29), b = rect(100, 100, 60, 60, 79, 79);
  const BinaryMask a3 = rect(100, 100, 13, 10, 32, 29);
  const MaskVideo gt = video_of({{1, {a, a}}, {2, {b, b}}}, 2);
  const MaskVideo pred = video_of({{7, {b, b}}, {5, {a, a3}}}, 2);  // other ids, one object shifted on frame 1
  VideoScores s = evaluate_video(pred, gt, {});
  ASSERT_EQ(s.objects.size(), 2u);
  EXPECT_EQ(s.objects[0].pred_id, 5);
  EXPECT_EQ(s.objects[1].pred_id, 7);
  EXPECT_DOUBLE_EQ(s.objects[0].j.mean, (1.0 + 340.0 / 460.0) / 2);
  EXPECT_DOUBLE_EQ(s.objects[1].j.mean, 1.0);
  EXPECT_DOUBLE_EQ(s.j.mean, ((1.0 + 340.0 / 460.0) / 2 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(s.jf, (s.j.mean + s.f.mean) / 2);
  // By ids nothing pairs: every object scores 0 (its gt shows on every frame, the prediction is empty).
  s = evaluate_video(pred, gt, {.matching = ObjectMatching::ids});
  EXPECT_FALSE(s.objects[0].pred_id.has_value());
  EXPECT_DOUBLE_EQ(s.jf, 0.0);
  EXPECT_EQ(s.unmatched_pred, (std::vector<int64_t>{5, 7}));
}

TEST(EvalMetrics, SkipFirstLastFollowsDavis) {
  const BinaryMask a = rect(50, 50, 10, 10, 29, 29);
  const MaskVideo gt = video_of({{1, {a, a, a}}}, 3);
  const MaskVideo pred = video_of({{1, {BinaryMask(50, 50), a, BinaryMask(50, 50)}}}, 3);
  EXPECT_NEAR(evaluate_video(pred, gt, {}).j.mean, 1.0 / 3, 1e-12);
  const VideoScores s = evaluate_video(pred, gt, {.skip_first_last = true});
  EXPECT_EQ(s.frames, 1);
  EXPECT_DOUBLE_EQ(s.jf, 1.0);
}

TEST(EvalMetrics, DavisFolderWithVoidAgainstSegmuxMasks) {
  const std::string dir = ::testing::TempDir() + "/eval_davis";
  fs::remove_all(dir);
  fs::create_directories(dir + "/gt");
  fs::create_directories(dir + "/run/masks");
  const int w = 64, h = 48;
  std::vector<std::array<uint8_t, 3>> palette(256, {0, 0, 0});
  palette[1] = {128, 0, 0};
  for (int f = 0; f < 2; ++f) {
    std::vector<uint8_t> labels(size_t(w) * h, 0);
    std::vector<uint16_t> ids(size_t(w) * h, 0);
    for (int y = 10; y < 20; ++y)
      for (int x = 10; x < 30; ++x) labels[size_t(y) * w + x] = 1;  // object 1: 200 pixels
    for (int y = 30; y < 40; ++y)
      for (int x = 0; x < 10; ++x) labels[size_t(y) * w + x] = 255;  // void: 100 pixels
    // segmux run (value = obj_id + 1): object 0 on the gt object and on half the void.
    for (int y = 10; y < 20; ++y)
      for (int x = 10; x < 30; ++x) ids[size_t(y) * w + x] = 1;
    for (int y = 30; y < 40; ++y)
      for (int x = 0; x < 5; ++x) ids[size_t(y) * w + x] = 1;
    char name[32];
    std::snprintf(name, sizeof name, "%05d.png", f);
    write_png_palette(dir + "/gt/" + name, w, h, labels, palette);
    write_png_gray(dir + "/run/masks/" + name, w, h, ids, true);
  }
  const MaskVideo gt = load_mask_video(dir + "/gt");
  const MaskVideo run = load_mask_video(dir + "/run");
  EXPECT_EQ(gt.objects.size(), 1u);
  EXPECT_EQ(gt.void_px.size(), 2u);
  EXPECT_EQ(run.objects.count(0), 1u);  // value 1 = obj_id 0
  const VideoScores s = evaluate_video(run, gt, {});
  EXPECT_EQ(s.objects[0].pred_id, 0);
  EXPECT_DOUBLE_EQ(s.jf, 1.0);  // the extra pixels lie in the void
  // Without the void the extra 50 pixels count: J = 200 / 250.
  MaskVideo no_void = gt;
  no_void.void_px.clear();
  EXPECT_DOUBLE_EQ(evaluate_video(run, no_void, {}).j.mean, 200.0 / 250.0);
}

TEST(EvalMetrics, RefusesWhatItCannotJudge) {
  const std::string dir = ::testing::TempDir() + "/eval_bad";
  fs::remove_all(dir);
  fs::create_directories(dir + "/rgb");
  RgbImage img{8, 8, std::vector<uint8_t>(8 * 8 * 3, 7)};
  write_png_rgb(dir + "/rgb/00000.png", img);
  try {
    load_mask_video(dir + "/rgb");
    FAIL() << "an RGB PNG was read as labels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a label image"), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/poly.json") << R"({"videos": [{"id": 1, "width": 8, "height": 8, "length": 1}],
    "annotations": [{"id": 1, "video_id": 1, "category_id": 1, "segmentations": [[[0, 0, 4, 0, 4, 4]]]}]})";
  try {
    load_mask_video(dir + "/poly.json");
    FAIL() << "a polygon was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("polygon"), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/two.json") << R"([{"video_id": 1, "score": 1, "segmentations": [null]},
    {"video_id": 2, "score": 1, "segmentations": [null]}])";
  EXPECT_THROW(load_mask_video(dir + "/two.json"), Error);  // several videos, no --video-id
  const MaskVideo a = video_of({{1, {rect(20, 10, 1, 1, 3, 3)}}}, 1),
                  b = video_of({{1, {rect(21, 10, 1, 1, 3, 3)}}}, 1);
  EXPECT_THROW(evaluate_video(a, b, {}), Error);  // sizes differ
  EXPECT_THROW(read_label_png(dir + "/missing.png"), Error);
}

TEST(EvalMetrics, YtvisAnnotationsAndResultsRoundTrip) {
  const std::string dir = ::testing::TempDir() + "/eval_ytvis";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 4 x 3 video, 2 frames; object 1 covers column 0 (3 pixels: runs [0, 3, 9]) on frame 0 only.
  std::ofstream(dir + "/gt.json") << R"({"videos": [{"id": 3, "width": 4, "height": 3, "length": 2}],
    "annotations": [{"id": 1, "video_id": 3, "category_id": 2,
                     "segmentations": [{"size": [3, 4], "counts": [0, 3, 9]}, null]}]})";
  std::ofstream(dir + "/res.json") << R"([{"video_id": 3, "category_id": 2, "score": 0.9,
    "segmentations": [{"size": [3, 4], "counts": [0, 6, 6]}, null]}])";
  const MaskVideo gt = load_mask_video(dir + "/gt.json");
  const MaskVideo res = load_mask_video(dir + "/res.json");
  EXPECT_EQ(gt.frames, (std::vector<int>{0, 1}));
  EXPECT_EQ(gt.categories.at(1), 2);
  EXPECT_DOUBLE_EQ(res.scores.at(0), 0.9);
  const VideoScores s = evaluate_video(res, gt, {});
  // Frame 0: J = 3 / 6; frame 1: both empty, J = 1.
  EXPECT_DOUBLE_EQ(s.j.mean, (0.5 + 1.0) / 2);
}

TEST(EvalMetrics, MaskletIouSumsOverFrames) {
  const RleMask a = rle_encode(rect(10, 10, 0, 0, 1, 1));  // 4 pixels
  // Frame 0: the same 4 pixels; frame 1: only b has a mask -> I = 4, U = 4 + 4.
  EXPECT_DOUBLE_EQ(masklet_iou({{0, a}}, {{0, a}, {1, a}}), 0.5);
  EXPECT_DOUBLE_EQ(masklet_iou({}, {}), 0.0);
}

TEST(EvalMetrics, MaskApByHand) {
  // Category 1: ground-truth masklets g1 (frames 0 and 1) and g2 (frame 0, a 5 x 5 square).
  // Predictions by score: d1 = g1 (IoU 1), d2 = g1 again (a duplicate: false positive), d3 = 17 of
  // g2's 25 pixels (IoU 0.68). A category-2 prediction has no ground truth and is left out.
  const BinaryMask a = rect(40, 30, 2, 2, 11, 9);
  BinaryMask part(30, 40);
  for (int i = 0; i < 17; ++i) part.at(20 + i / 5, 20 + i % 5) = 1;
  MaskVideo gt, pred;
  gt.width = pred.width = 40;
  gt.height = pred.height = 30;
  gt.frames = pred.frames = {0, 1};
  gt.objects[1] = {{0, rle_encode(a)}, {1, rle_encode(a)}};
  gt.objects[2] = {{0, rle_encode(rect(40, 30, 20, 20, 24, 24))}};
  gt.categories = {{1, 1}, {2, 1}};
  pred.objects[10] = gt.objects[1];
  pred.objects[11] = gt.objects[1];
  pred.objects[12] = {{0, rle_encode(part)}};
  pred.objects[13] = {{1, rle_encode(a)}};
  pred.categories = {{10, 1}, {11, 1}, {12, 1}, {13, 2}};
  pred.scores = {{10, 0.9}, {11, 0.8}, {12, 0.7}, {13, 0.95}};
  const auto ap = video_mask_ap(pred, gt);
  ASSERT_TRUE(ap.has_value());
  EXPECT_EQ(ap->categories, 1);
  // IoU thresholds 0.50..0.65 (d3 matches): TP FP TP -> recall .5 .5 1, interpolated precision 1 up to
  // recall .5 (51 of the 101 points), 2/3 above (50 points). 0.70..0.95: TP FP FP -> 1 up to .5, 0 above.
  const double with_d3 = (51 + 50 * 2.0 / 3) / 101, without = 51.0 / 101;
  EXPECT_NEAR(ap->ap50, with_d3, 1e-12);
  EXPECT_NEAR(ap->ap75, without, 1e-12);
  EXPECT_NEAR(ap->ap, (4 * with_d3 + 6 * without) / 10, 1e-12);
  // A ground-truth category nothing predicted scores 0 and joins the mean.
  gt.objects[3] = {{1, rle_encode(a)}};
  gt.categories[3] = 5;
  const auto ap2 = video_mask_ap(pred, gt);
  EXPECT_EQ(ap2->categories, 2);
  EXPECT_NEAR(ap2->ap, (4 * with_d3 + 6 * without) / 20, 1e-12);
  // Two videos pooled: the same video twice gives the same AP (precision and recall are ratios).
  gt.objects.erase(3);
  gt.categories.erase(3);
  ApPool pool;
  add_ap_matches(pred, gt, pool);
  add_ap_matches(pred, gt, pool);
  EXPECT_NEAR(ap_from_pool(pool)->ap50, with_d3, 1e-12);
  // No scores: AP does not apply.
  pred.scores.clear();
  EXPECT_FALSE(video_mask_ap(pred, gt).has_value());
}

TEST(EvalMetrics, HostileLabelPngsAreRefused) {
  const std::string dir = ::testing::TempDir() + "/eval_hostile";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<uint16_t> ids(16 * 8, 3);
  write_png_gray(dir + "/ok.png", 16, 8, ids, false);
  const LabelImage ok = read_label_png(dir + "/ok.png");
  EXPECT_EQ(ok.values, ids);
  std::string bytes;
  {
    std::ifstream in(dir + "/ok.png", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Truncated in the middle of its data: an error naming the file, no crash.
  std::ofstream(dir + "/cut.png", std::ios::binary) << bytes.substr(0, bytes.size() - 20);
  EXPECT_THROW(read_label_png(dir + "/cut.png"), Error);
  // A header declaring 100000 x 100000 pixels: refused before anything is allocated.
  std::string huge = bytes;
  const unsigned char dims[8] = {0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0};
  huge.replace(16, 8, reinterpret_cast<const char*>(dims), 8);
  std::ofstream(dir + "/huge.png", std::ios::binary) << huge;
  try {
    read_label_png(dir + "/huge.png");
    FAIL() << "a 10 Gpixel label image was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("huge.png"), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/text.png") << "not a png";
  EXPECT_THROW(read_label_png(dir + "/text.png"), Error);
}

TEST(EvalMetrics, MalformedJsonInputsGiveSegmuxErrors) {
  const std::string dir = ::testing::TempDir() + "/eval_malformed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const char* docs[] = {
      R"({"format": 3, "videos": 1})",
      R"({"format": "segmux-tracks-2", "width": 4, "height": 3, "frames": [{"frame_index": 0, "objects": [{"id": 1,
          "prompt": 7, "mask_rle": {"size": [3, 4], "counts": [0, 12, 5]}}]}]})",
      R"({"format": "segmux-tracks-2", "width": 4, "height": 3, "frames": [{"frame_index": "0"}]})",
      R"([{"video_id": 1, "segmentations": [{"size": ["3", 4], "counts": ""}]}])",
      R"({"videos": [{"id": 1, "width": 4, "height": 3, "length": 1}], "annotations": [{"id": 1, "video_id": 1,
          "segmentations": [{"size": [3, 4], "counts": "&&&"}]}]})",
      R"([1, 2, 3])"};
  int i = 0;
  for (const char* doc : docs) {
    const std::string path = dir + "/" + std::to_string(i++) + ".json";
    std::ofstream(path) << doc;
    EXPECT_THROW(load_mask_video(path), Error) << doc;
  }
}

TEST(EvalMetrics, AllVideosOfAYtvisDataset) {
  const std::string dir = ::testing::TempDir() + "/eval_all_videos";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Two 4 x 3 videos of one frame, one object each (column 0: runs [0, 3, 9]). The results find video
  // 1's object exactly and say nothing of video 2.
  std::ofstream(dir + "/gt.json") << R"({"videos": [{"id": 1, "width": 4, "height": 3, "length": 1},
                                                   {"id": 2, "width": 4, "height": 3, "length": 1}],
    "annotations": [{"id": 1, "video_id": 1, "category_id": 1, "segmentations": [{"size": [3, 4], "counts": [0, 3, 9]}]},
                    {"id": 2, "video_id": 2, "category_id": 1, "segmentations": [{"size": [3, 4], "counts": [0, 3, 9]}]}]})";
  std::ofstream(dir + "/res.json") << R"([{"video_id": 1, "category_id": 1, "score": 0.9,
    "segmentations": [{"size": [3, 4], "counts": [0, 3, 9]}]}])";
  const DatasetScores d =
      evaluate_videos(load_ytvis_videos(dir + "/res.json"), load_ytvis_videos(dir + "/gt.json"), {});
  ASSERT_EQ(d.videos.size(), 2u);
  EXPECT_DOUBLE_EQ(d.videos[0].second.jf, 1.0);
  EXPECT_DOUBLE_EQ(d.videos[1].second.jf, 0.0);
  EXPECT_EQ(d.objects, 2);
  EXPECT_DOUBLE_EQ(d.jf, 0.5);  // over every object of every video
  // Pooled AP: one detection (a match at every threshold) for two ground-truth masklets: precision 1 up
  // to recall 0.5 (51 of the 101 points), nothing above.
  ASSERT_TRUE(d.ap.has_value());
  EXPECT_NEAR(d.ap->ap, 51.0 / 101, 1e-12);
}

// Found while writing fuzz_eval_json: declared sizes and runs that the loaders trusted.
TEST(EvalMetrics, DeclaredSizesAndRunsAreBounded) {
  const std::string dir = ::testing::TempDir() + "/eval_bounded";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto error_of = [&](const std::string& name, const std::string& doc) -> std::string {
    std::ofstream(dir + "/" + name) << doc;
    try {
      load_mask_video(dir + "/" + name);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  // A billion frames declared by 'length' (the frame list was made from the number alone).
  EXPECT_NE(error_of("long.json", R"({"videos": [{"id": 1, "width": 4, "height": 3, "length": 1000000000}],
    "annotations": []})")
                .find("declares 1000000000 frames"),
            std::string::npos);
  // Runs whose sum overflows int64 (UB before; now refused as soon as they pass the mask's pixels).
  EXPECT_NE(error_of("overflow.json", R"([{"video_id": 1, "segmentations": [{"size": [3, 4],
    "counts": [4611686018427387904, 4611686018427387904, 4611686018427387904, 4611686018427387904, 12]}]}])")
                .find("cover more than the 12 pixels"),
            std::string::npos);
  // Videos that each declare 2^20 frames, 17 of them: more than 2^24 frames in all.
  std::string videos;
  for (int v = 1; v <= 17; ++v)
    videos += std::string(v > 1 ? ", " : "") + R"({"id": )" + std::to_string(v) +
              R"(, "width": 4, "height": 3, "length": 1048576})";
  std::ofstream(dir + "/many.json") << R"({"videos": [)" << videos << R"(], "annotations": []})";
  try {
    load_ytvis_videos(dir + "/many.json");
    ADD_FAILURE() << "17 x 2^20 frames were loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frames in all"), std::string::npos) << e.what();
  }
  // A 2^20 x 2^20 frame (evaluation expands every mask to it).
  EXPECT_NE(error_of("huge.json", R"({"format": "segmux-tracks-2", "width": 1048576, "height": 1048576,
    "frames": []})")
                .find("Mpixel"),
            std::string::npos);
}

// Found while writing fuzz_label_png: a 16-bit label image of many values took one full mask per value (65535
// values x the pixels); its runs are now made in one pass. Run in a child under a 1 GiB address space.
TEST(EvalMetrics, ManyLabelValuesTakeMemoryByRunsNotByValues) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "ASan reserves terabytes of address space: the Release run checks this";
#endif
  const std::string dir = ::testing::TempDir() + "/eval_many_values";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int w = 512, h = 512;
  std::vector<uint16_t> values(size_t(w) * h);
  for (size_t i = 0; i < values.size(); ++i) values[i] = uint16_t(i % 65535 + 1);
  write_png_gray(dir + "/00000.png", w, h, values, true);
  auto load_in_1_gib = [&] {
    const rlimit lim{size_t(1) << 30, size_t(1) << 30};
    ::setrlimit(RLIMIT_AS, &lim);
    const MaskVideo v = load_mask_video(dir);
    // Every value but 255 (DAVIS void) is an object of 4 or 5 pixels (pixels i, i + 65535, ... of the
    // row-major image).
    const RleMask& seven = v.objects.at(7).at(0);
    std::exit(v.objects.size() == 65534 && v.void_px.count(0) && rle_area(seven) == 4 && rle_decode(seven).at(0, 6) == 1
                  ? 0
                  : 1);
  };
  EXPECT_EXIT(load_in_1_gib(), ::testing::ExitedWithCode(0), "");
}

TEST(EvalMetrics, LabelRunsMatchTheMaskEncoder) {
  const std::string dir = ::testing::TempDir() + "/eval_label_runs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int w = 7, h = 5;
  std::vector<uint16_t> values(size_t(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) values[size_t(y) * w + x] = uint16_t((x * 3 + y * y) % 4);
  write_png_gray(dir + "/00000.png", w, h, values, false);
  const MaskVideo v = load_mask_video(dir);
  ASSERT_EQ(v.objects.size(), 3u);
  for (int value = 1; value <= 3; ++value) {
    BinaryMask m(h, w);
    for (size_t i = 0; i < values.size(); ++i) m.pixels[i] = values[i] == value;
    EXPECT_EQ(v.objects.at(value).at(0).counts, rle_encode(m).counts) << value;
  }
}
