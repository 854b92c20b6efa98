// Internal to the control plane (control_plane*.cpp): the state of one frame while
// VideoControlPlane::process_frame works on it, and the decisions taken on it as functions that call
// no model (the steps in control_plane_steps.cpp call the model session and these in the official order).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "pipeline/backends/model.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/control_plane.h"

namespace segmux::pipeline {

inline constexpr int64_t kNeverOccluded = -1;
inline constexpr int64_t kAlwaysOccluded = 100000;  // removed objects lose every occlusion comparison
inline constexpr float kRemovedScore = -1e4f;
inline constexpr int kUnconfirmed = 1;
inline constexpr int kConfirmed = 2;

// A small row-major matrix (detections x tracks, tracks x tracks).
template <typename T>
class Matrix {
 public:
  Matrix() = default;
  Matrix(int rows, int cols, T fill = T{}) : rows_(rows), cols_(cols), v_(size_t(rows) * size_t(cols), fill) {}
  // Takes over row-major values (pairwise_overlap results, HotstartMetadata::overlap_pair_counts).
  static Matrix adopt(std::vector<T> values, int rows, int cols) {
    SEGMUX_CHECK(values.size() == size_t(rows) * size_t(cols), "matrix of ", rows, "x", cols, " given ", values.size(),
                 " values");
    Matrix m;
    m.rows_ = rows;
    m.cols_ = cols;
    m.v_ = std::move(values);
    return m;
  }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  T& operator()(int r, int c) { return v_[size_t(r) * size_t(cols_) + size_t(c)]; }
  const T& operator()(int r, int c) const { return v_[size_t(r) * size_t(cols_) + size_t(c)]; }
  template <typename Pred>
  int count_in_row(int r, Pred p) const {
    int n = 0;
    for (int c = 0; c < cols_; ++c) n += p((*this)(r, c)) ? 1 : 0;
    return n;
  }
  template <typename Pred>
  int count_in_col(int c, Pred p) const {
    int n = 0;
    for (int r = 0; r < rows_; ++r) n += p((*this)(r, c)) ? 1 : 0;
    return n;
  }
  std::vector<T> release() && { return std::move(v_); }

 private:
  int rows_ = 0;
  int cols_ = 0;
  std::vector<T> v_;
};

// Detections of the frame after NMS and boundary suppression, rows in the kept-first order.
struct Detections {
  std::vector<int> kept_queries;  // query indices kept, ascending
  std::vector<int> order;         // query index of each row
  std::vector<float> scores;      // probabilities
  std::vector<bool> keep;         // kept by NMS / boundary suppression
  MaskStack masks;                // low-res mask logits
  int count() const { return int(scores.size()); }
};

// Tracker outputs of every tracked object, rows by ascending id (= the tracked object list).
struct Tracks {
  std::vector<int64_t> ids;
  std::vector<float> score_logits;
  MaskStack masks;  // low-res logits, holes filled; reconditioning and occlusion suppression edit them
  int count() const { return masks.count; }
  int row_of(int64_t id) const;
};

struct Association {
  Matrix<uint8_t> matched;          // detection x track: overlap >= assoc_iou_thresh, ambiguous pairs cleared
  std::vector<bool> trk_nonempty;   // per track: the mask has a positive logit
  std::vector<bool> trk_unmatched;  // per track: no detection overlaps it >= trk_assoc_iou_thresh
  std::vector<int> new_dets;        // detections that start new objects, ascending
  // (track id, detection) of high-confidence detections best matching a track, official dict order.
  std::vector<std::pair<int64_t, int>> recondition_candidates;
  bool track_matched(int j) const {
    return matched.count_in_col(j, [](uint8_t m) { return m != 0; }) > 0;
  }
};

struct HotstartChoice {
  std::vector<bool> remove;    // per track
  std::vector<bool> suppress;  // per track: keep-alive ran out (computed as officially)
};

// Reconditioning: the tracks re-anchored to detector masks, grouped per tracker state.
struct ReconditionPlan {
  struct Group {
    size_t state = 0;  // index into the control plane's states
    std::vector<int64_t> obj_ids;
    std::vector<int> det_rows;
  };
  bool active = false;                         // this frame reconditions (hole filling runs again)
  std::vector<std::pair<int64_t, int>> valid;  // (track id, detection) whose tracker score is high too
  std::vector<Group> groups;                   // first-seen state order
};

struct ObjectChanges {
  std::vector<int> new_dets;  // after the object-count cap, highest scores first when capped
  std::vector<int64_t> new_ids;
  int dropped = 0;                 // new detections over the object-count cap
  std::vector<int64_t> removed;    // ascending
  std::vector<int64_t> ids_after;  // tracked object list after the frame
};

// Everything known about the frame being processed.
struct FrameWork {
  int frame_index = 0;
  bool reverse = false;
  FramePhase phase = FramePhase::Propagate;
  std::vector<sam31::BoxExemplar> boxes;  // grounded with the text (add_prompt's box exemplars)
  Detections det;
  Tracks trk;
  Association assoc;
  HotstartChoice hot;
  ReconditionPlan recondition;
  ObjectChanges changes;
  std::map<int64_t, float> sam2_scores;  // per output object: the score the non-overlap rule uses
  FrameDecisions record;                 // what was decided, as trace.json lists it
};

// ---- helpers ----

template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<int>& rows) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (int r : rows) out.push_back(v[size_t(r)]);
  return out;
}
std::vector<float> tensor_to_floats(const Tensor& t, const char* what);
// Mask logits -> tracker mask inputs: input-mask resolution, binarised, u8 [N, size, size]
// (official _tracker_add_new_objects).
Tensor mask_inputs(const MaskStack& masks, int size);

// ---- decisions: no model call, no control-plane state beyond their arguments ----

// NMS, boundary suppression and the kept-first order of the detector output.
// nms: single_frame on the add_prompt frame, batched while propagating (the official detector's two paths).
Detections select_detections(const DetectorOutput& out, int frame_index, int mask_size, const ControlConfig& cfg,
                             NmsVariant nms = NmsVariant::batched);
// Detections x tracks: matches, unmatched tracks, new objects, reconditioning candidates.
Association associate(const Detections& det, const Tracks& trk, const ControlConfig& cfg);
// Hot start (official _process_hotstart_gpu): updates the keep-alive / unmatch / overlap counts of
// `meta` (position-indexed like the tracks) and chooses removals and keep-alive suppression.
HotstartChoice decide_hotstart(HotstartMetadata& meta, const Association& assoc, int frame_index, bool reverse,
                               const ControlConfig& cfg);
// Which tracks overlapping another (IoU >= threshold) lose for having been occluded more recently.
std::vector<bool> choose_occlusion_suppression(const MaskStack& trk_masks, const std::vector<int64_t>& last_occluded,
                                               bool reverse, const ControlConfig& cfg);
// New object ids (object-count cap), removals and the object list after the frame.
ObjectChanges decide_object_changes(const Detections& det, const Tracks& trk, const Association& assoc,
                                    const HotstartChoice& hot, const std::vector<int64_t>& obj_ids, int64_t max_obj_id,
                                    const ControlConfig& cfg);
// The new objects and every track matched by a kept detection (masklet confirmation counts them).
std::set<int64_t> matched_object_ids(const Detections& det, const Tracks& trk, const Association& assoc,
                                     const std::vector<int64_t>& new_ids);
// Masklet confirmation: consecutive frames matched by a detection (new objects count as matched).
void update_confirmation(HotstartMetadata& meta, const std::vector<int64_t>& ids_before,
                         const std::vector<int64_t>& ids_after, const std::set<int64_t>& matched,
                         const ControlConfig& cfg);
// The position-indexed metadata without the removed tracks, extended for `num_new` new objects.
HotstartMetadata compact_metadata(const HotstartMetadata& meta, const std::vector<bool>& removed, size_t num_new,
                                  int frame_index, const ControlConfig& cfg);

}  // namespace segmux::pipeline
