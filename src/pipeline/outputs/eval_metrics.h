// The standard video-object segmentation measures, as the DAVIS benchmark defines them (Perazzi et al.
// 2016; the davis2017-evaluation toolkit that DAVIS / YouTube-VOS style evaluations use):
//   J (region similarity)  intersection over union of a predicted and a ground-truth mask, void pixels
//                          left out; 1 when both are empty.
//   F (boundary accuracy)  F-measure of the two masks' boundary pixels (seg2bmap: a pixel whose right,
//                          lower or lower-right neighbour differs), a boundary pixel matching when the
//                          other boundary lies within a disk of radius ceil(bound_th * image diagonal)
//                          (bound_th 0.008); 1 when both boundaries are empty, 0 when one is.
//   per object over frames: mean (M), recall (share of frames above 0.5, O) and decay (mean of the
//   first quarter of the frames minus the last quarter, D); J&F = (J mean + F mean) / 2.
// Objects of a prediction are paired with ground-truth objects by id or by the assignment that
// maximises the summed mean J (the DAVIS unsupervised protocol; Hungarian method).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/masks/rle.h"

namespace segmux::pipeline {

constexpr double kDavisBoundTh = 0.008;

// J of one frame. `void_px` (optional, same size) marks pixels neither side is judged on.
double region_similarity(const BinaryMask& pred, const BinaryMask& gt, const BinaryMask* void_px = nullptr);
// DAVIS seg2bmap: the mask's boundary pixels (same size, 0/1).
BinaryMask boundary_map(const BinaryMask& mask);
// F of one frame (DAVIS f_measure). bound_th < 1: a fraction of the diagonal; >= 1: pixels.
double boundary_measure(const BinaryMask& pred, const BinaryMask& gt, const BinaryMask* void_px = nullptr,
                        double bound_th = kDavisBoundTh);

struct SeriesStats {
  double mean = 0, recall = 0, decay = 0;
};
// DAVIS db_statistics over one object's per-frame values (empty: all 0).
SeriesStats series_stats(const std::vector<double>& per_frame);

// For each row of a score matrix (rows x cols, every row the same length), the column it is assigned
// to (-1: none) so that the summed score is largest and no column is used twice.
std::vector<int> best_assignment(const std::vector<std::vector<double>>& score);

// A set of objects over frames, each object's masks as RLE (absent frame = empty mask), as read from a
// segmux output folder, a DAVIS annotation folder or a YTVIS json (eval_inputs.h).
struct MaskVideo {
  int width = 0, height = 0;
  std::vector<int> frames;                            // frame indices that exist (annotated / written), ascending
  std::map<int64_t, std::map<int, RleMask>> objects;  // object id -> frame index -> mask
  std::map<int, RleMask> void_px;                     // frame index -> pixels to ignore (DAVIS 255)
  std::map<int64_t, int> categories;                  // object id -> category id (YTVIS), when known
  std::map<int64_t, double> scores;                   // object id -> score (predictions), when known
  std::string description;                            // what was read, for the report
};

enum class ObjectMatching { ids, best };
ObjectMatching parse_object_matching(const std::string& name);  // "ids" / "best"; throws on others

struct EvalOptions {
  ObjectMatching matching = ObjectMatching::best;
  double bound_th = kDavisBoundTh;
  bool skip_first_last = false;  // the DAVIS 2017 semi-supervised protocol leaves out both ends
};

struct ObjectScore {
  int64_t gt_id = 0;
  std::optional<int64_t> pred_id;  // none: no predicted object was paired (J = F = 0 where gt shows)
  SeriesStats j, f;
};

// Mask AP where it applies: predictions with scores and categories (a YTVIS results file, a segmux run)
// against ground truth with categories (YTVIS annotations), COCO's way (pycocotools COCOeval as the
// YTVIS API uses it): per category, predictions by descending score matched greedily to the unmatched
// ground-truth masklet of highest IoU at each threshold 0.50:0.05:0.95, precision interpolated at 101
// recall points; masklet IoU = intersection summed over frames / union summed over frames. One video
// (the dataset-wide AP pools every video's matches: run the official evaluator for that).
struct MaskAp {
  double ap = 0, ap50 = 0, ap75 = 0;
  int categories = 0;  // categories with ground truth
};
std::optional<MaskAp> video_mask_ap(const MaskVideo& pred, const MaskVideo& gt);
// Several videos: every video's matches pooled per category before precision and recall (COCOeval's
// accumulate), then ap_from_pool.
struct CategoryMatches {
  int64_t num_gt = 0;
  std::vector<std::pair<double, std::vector<bool>>> dets;  // score, matched at each IoU threshold
};
using ApPool = std::map<int, CategoryMatches>;
void add_ap_matches(const MaskVideo& pred, const MaskVideo& gt, ApPool& pool);
std::optional<MaskAp> ap_from_pool(const ApPool& pool);
double masklet_iou(const std::map<int, RleMask>& a, const std::map<int, RleMask>& b);

struct VideoScores {
  std::vector<ObjectScore> objects;     // one per ground-truth object, by id
  std::vector<int64_t> unmatched_pred;  // predicted objects paired with nothing
  int frames = 0;                       // frames evaluated
  SeriesStats j, f;                     // means over objects
  double jf = 0;
  std::optional<MaskAp> ap;  // when both sides have categories and pred has scores
};

// Evaluates `pred` against `gt` on gt's frames (a frame pred lacks is an empty prediction). Sizes must
// agree; errors say which.
VideoScores evaluate_video(const MaskVideo& pred, const MaskVideo& gt, const EvalOptions& opt);

// A dataset of videos (YTVIS jsons, --all-videos): each ground-truth video against the prediction's
// video of the same id (none: an empty prediction); J, F and J&F averaged over every object of every
// video (as DAVIS averages over all sequences' objects), mask AP pooled over the videos (COCOeval).
struct DatasetScores {
  std::vector<std::pair<int64_t, VideoScores>> videos;
  SeriesStats j, f;
  double jf = 0;
  int objects = 0;
  std::optional<MaskAp> ap;
};
DatasetScores evaluate_videos(const std::vector<std::pair<int64_t, MaskVideo>>& pred,
                              const std::vector<std::pair<int64_t, MaskVideo>>& gt, const EvalOptions& opt);

// The scores by their DAVIS names ("J&F-Mean", "J-Mean", "J-Recall", "J-Decay", "F-Mean", ...), with
// per-object entries, as `segmux eval --json` prints them.
nlohmann::json scores_json(const VideoScores& s);

}  // namespace segmux::pipeline
