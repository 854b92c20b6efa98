// The control plane's per-frame decisions (declared in control_plane_frame.h): functions of their
// arguments only, no model call. Facts from the official sam3 code, commit 9f22cb9.
#include <algorithm>
#include <cstring>

#include "core/tensor_ops.h"
#include "pipeline/predictor/control_plane_frame.h"

namespace segmux::pipeline {

std::vector<float> tensor_to_floats(const Tensor& t, const char* what) {
  SEGMUX_CHECK(t.defined(), what, ": tensor is missing");
  Tensor f = as_f32(t);
  std::vector<float> v(static_cast<size_t>(f.numel()));
  if (!v.empty()) std::memcpy(v.data(), f.raw(), v.size() * sizeof(float));
  return v;
}

Tensor mask_inputs(const MaskStack& masks, int size) {
  MaskStack hi = resize_bilinear(masks, size, size);
  Tensor t(DType::u8, {int64_t(hi.count), hi.height, hi.width});
  auto* p = t.data<uint8_t>();
  for (int i = 0; i < hi.count; ++i) {
    BinaryMask b = binarize(hi.mask(i), hi.height, hi.width);
    std::memcpy(p + size_t(i) * hi.plane(), b.pixels.data(), hi.plane());
  }
  return t;
}

int Tracks::row_of(int64_t id) const {
  auto it = std::find(ids.begin(), ids.end(), id);
  SEGMUX_CHECK(it != ids.end(), "object ", id, " is not among the tracked objects");
  return int(it - ids.begin());
}

namespace {
std::vector<std::array<float, 4>> boxes_of(const std::vector<float>& values) {
  std::vector<std::array<float, 4>> boxes(values.size() / 4);
  for (size_t q = 0; q < boxes.size(); ++q)
    for (size_t k = 0; k < 4; ++k) boxes[q][k] = values[q * 4 + k];
  return boxes;
}

// Probabilities; NMS-suppressed queries get the official -1e4 logit offset.
std::vector<float> detection_probs(const std::vector<float>& logits, const MaskStack& masks, const ControlConfig& cfg,
                                   NmsVariant nms) {
  std::vector<float> probs(logits.size());
  for (size_t q = 0; q < logits.size(); ++q) probs[q] = sigmoidf(logits[q]);
  if (cfg.det_nms_thresh > 0.f) {
    auto keep = nms_masks(probs, masks, cfg.score_threshold_detection, cfg.det_nms_thresh,
                          cfg.det_nms_use_iom ? Overlap::IoM : Overlap::IoU, nms);
    for (size_t q = 0; q < logits.size(); ++q)
      if (!keep[q]) probs[q] = sigmoidf(logits[q] - 1e4f);
  }
  return probs;
}
}  // namespace

Detections select_detections(const DetectorOutput& out, int frame_index, int mask_size, const ControlConfig& cfg,
                             NmsVariant nms) {
  std::vector<float> logits = tensor_to_floats(out.pred_logits, "detector pred_logits");
  std::vector<float> box_vals = tensor_to_floats(out.boxes_xyxy, "detector boxes");
  MaskStack masks = MaskStack::from_tensor(out.mask_logits, "detector mask logits");
  const int Q = int(logits.size());
  SEGMUX_CHECK(int(box_vals.size()) == 4 * Q && masks.count == Q, "detector output for frame ", frame_index, ": ", Q,
               " logits, ", box_vals.size() / 4, " boxes, ", masks.count, " masks");
  SEGMUX_CHECK(Q == 0 || (masks.height == mask_size && masks.width == mask_size), "detector masks are ", masks.height,
               "x", masks.width, ", expected ", mask_size, "x", mask_size);
  std::vector<float> probs = detection_probs(logits, masks, cfg, nms);
  std::vector<bool> kept(static_cast<size_t>(Q));
  for (size_t q = 0; q < kept.size(); ++q) kept[q] = probs[q] > cfg.score_threshold_detection;
  if (cfg.suppress_det_close_to_boundary) {
    auto away = boxes_away_from_boundary(boxes_of(box_vals), cfg.boundary_margin);
    for (size_t q = 0; q < kept.size(); ++q) kept[q] = kept[q] && away[q];
  }
  Detections d;
  for (int q = 0; q < Q; ++q)
    if (kept[size_t(q)]) d.kept_queries.push_back(q);
  d.order = keep_first_order(kept);
  d.scores = pick(probs, d.order);
  for (int q : d.order) d.keep.push_back(kept[size_t(q)]);
  d.masks = masks.select(d.order);
  return d;
}

namespace {
// One detection's association with the tracks.
struct DetectionMatch {
  bool is_new = false;
  bool high_conf = false;     // confident, kept and not new: may recondition its best track
  bool high_overlap = false;  // its best track overlaps it >= the reconditioning threshold
  int best_track = 0;
};

auto at_least(float threshold) {
  return [threshold](float v) { return v >= threshold; };
}

std::vector<bool> nonempty_masks(const MaskStack& masks) {
  std::vector<bool> out(static_cast<size_t>(masks.count));
  for (int j = 0; j < masks.count; ++j) {
    const float* p = masks.mask(j);
    out[size_t(j)] = std::any_of(p, p + masks.plane(), [](float v) { return v > 0.f; });
  }
  return out;
}

// Detection x track overlap (IoM or IoU) at the smaller of the two mask sizes; dropped detections 0.
Matrix<float> detection_track_overlap(const Detections& det, const Tracks& trk, const ControlConfig& cfg) {
  MaskStack dm = det.masks, tm = trk.masks;
  if (dm.height != tm.height || dm.width != tm.width) {
    if (size_t(dm.height) * size_t(dm.width) < size_t(tm.height) * size_t(tm.width))
      tm = resize_bilinear(tm, dm.height, dm.width);
    else
      dm = resize_bilinear(dm, tm.height, tm.width);
  }
  const Overlap kind = cfg.use_iom_recondition ? Overlap::IoM : Overlap::IoU;
  return Matrix<float>::adopt(pairwise_overlap(dm, tm, kind, &det.keep), det.count(), trk.count());
}

// Unmatched tracks and new detections come from the raw overlaps; then every pair in a row or column
// with more than one overlap >= the reconditioning threshold is cleared before the matches and best
// tracks are read off (official order).
void match(Matrix<float> overlap, const Detections& det, const ControlConfig& cfg, Association& a,
           std::vector<DetectionMatch>& dets) {
  const int N = overlap.rows(), M = overlap.cols();
  for (int j = 0; j < M; ++j)
    a.trk_unmatched[size_t(j)] =
        a.trk_nonempty[size_t(j)] && overlap.count_in_col(j, at_least(cfg.trk_assoc_iou_thresh)) == 0;
  for (int i = 0; i < N; ++i)
    dets[size_t(i)].is_new = det.scores[size_t(i)] >= cfg.new_det_thresh && det.keep[size_t(i)] &&
                             overlap.count_in_row(i, at_least(cfg.assoc_iou_thresh)) == 0;
  const float rec = cfg.use_iom_recondition ? cfg.iom_thresh_recondition : cfg.iou_thresh_recondition;
  std::vector<bool> det_many(static_cast<size_t>(N)), trk_many(static_cast<size_t>(M));
  for (int i = 0; i < N; ++i) det_many[size_t(i)] = overlap.count_in_row(i, at_least(rec)) > 1;
  for (int j = 0; j < M; ++j) trk_many[size_t(j)] = overlap.count_in_col(j, at_least(rec)) > 1;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < M; ++j)
      if (trk_many[size_t(j)] || det_many[size_t(i)]) overlap(i, j) = 0.f;
  for (int i = 0; i < N; ++i) {
    DetectionMatch& d = dets[size_t(i)];
    for (int j = 1; j < M; ++j)
      if (overlap(i, j) > overlap(i, d.best_track)) d.best_track = j;
    d.high_conf = det.scores[size_t(i)] >= cfg.high_conf_thresh && det.keep[size_t(i)] && !d.is_new;
    d.high_overlap = overlap(i, d.best_track) >= rec;
    for (int j = 0; j < M; ++j) a.matched(i, j) = overlap(i, j) >= cfg.assoc_iou_thresh;
  }
}

// A later detection for the same track replaces the earlier one in place (Python dict order).
void add_candidate(std::vector<std::pair<int64_t, int>>& candidates, int64_t track_id, int det) {
  auto it = std::find_if(candidates.begin(), candidates.end(), [&](const auto& p) { return p.first == track_id; });
  if (it != candidates.end())
    it->second = det;
  else
    candidates.emplace_back(track_id, det);
}
}  // namespace

Association associate(const Detections& det, const Tracks& trk, const ControlConfig& cfg) {
  const int N = det.count(), M = trk.count();
  Association a;
  a.matched = Matrix<uint8_t>(N, M, 0);
  a.trk_nonempty = nonempty_masks(trk.masks);
  a.trk_unmatched.assign(size_t(M), false);
  std::vector<DetectionMatch> dets(static_cast<size_t>(N));
  if (M == 0) {
    for (int i = 0; i < N; ++i)
      dets[size_t(i)].is_new = det.scores[size_t(i)] >= cfg.new_det_thresh && det.keep[size_t(i)];
  } else if (N == 0) {
    a.trk_unmatched.assign(size_t(M), true);  // official: all unmatched
  } else {
    match(detection_track_overlap(det, trk, cfg), det, cfg, a, dets);
  }
  for (int i = 0; i < N; ++i) {
    const DetectionMatch& d = dets[size_t(i)];
    if (d.is_new) a.new_dets.push_back(i);
    if (M > 0 && det.keep[size_t(i)] && d.high_conf && d.high_overlap)
      add_candidate(a.recondition_candidates, trk.ids[size_t(d.best_track)], i);
  }
  return a;
}

namespace {
// Keep-alive moves towards matched (+1) or unmatched (-1); unmatched frames are counted in total.
void update_keep_alive(HotstartMetadata& meta, const Association& a, const ControlConfig& cfg) {
  for (size_t j = 0; j < a.trk_nonempty.size(); ++j) {
    int64_t v = meta.trk_keep_alive[j] + (a.track_matched(int(j)) ? 1 : -1);
    v = std::clamp<int64_t>(v, cfg.min_trk_keep_alive, cfg.max_trk_keep_alive);
    if (cfg.decrease_trk_keep_alive_for_empty_masklets && !a.trk_nonempty[j])
      v = std::max<int64_t>(v - 1, cfg.min_trk_keep_alive);
    meta.trk_keep_alive[j] = v;
    if (a.trk_unmatched[j]) ++meta.consecutive_unmatch_count[j];  // total, never reset
  }
}

// Counts the pairs of tracks (a < b) matched by one detection.
void count_overlapping_pairs(Matrix<int64_t>& pairs, const Matrix<uint8_t>& matched) {
  for (int i = 0; i < matched.rows(); ++i) {
    if (matched.count_in_row(i, [](uint8_t m) { return m != 0; }) < 2) continue;
    for (int a = 0; a < matched.cols(); ++a)
      for (int b = a + 1; b < matched.cols(); ++b)
        if (matched(i, a) && matched(i, b)) ++pairs(a, b);
  }
}
}  // namespace

HotstartChoice decide_hotstart(HotstartMetadata& meta, const Association& assoc, int frame_index, bool reverse,
                               const ControlConfig& cfg) {
  const int M = int(assoc.trk_nonempty.size());
  HotstartChoice h{std::vector<bool>(size_t(M), false), std::vector<bool>(size_t(M), false)};
  if (M == 0) return h;
  SEGMUX_CHECK(meta.obj_first_frame.size() == size_t(M), "hot-start metadata holds ", meta.obj_first_frame.size(),
               " objects, the tracker ", M);
  update_keep_alive(meta, assoc, cfg);
  auto pairs = Matrix<int64_t>::adopt(std::move(meta.overlap_pair_counts), M, M);
  count_overlapping_pairs(pairs, assoc.matched);
  const auto& first_frame = meta.obj_first_frame;
  const int64_t hot_diff = reverse ? frame_index + cfg.hotstart_delay : frame_index - cfg.hotstart_delay;
  for (int j = 0; j < M; ++j) {
    const int64_t first = first_frame[size_t(j)];
    const bool within = reverse ? first < hot_diff : first > hot_diff;
    const bool by_unmatch = within && meta.consecutive_unmatch_count[size_t(j)] >= cfg.hotstart_unmatch_thresh;
    int64_t max_overlap = 0;  // with tracks born earlier
    for (int i = 0; i < M; ++i) {
      const bool earlier = reverse ? first_frame[size_t(i)] > first : first_frame[size_t(i)] < first;
      if (earlier) max_overlap = std::max(max_overlap, pairs(i, j));
    }
    const bool by_overlap = within && max_overlap >= cfg.hotstart_dup_thresh;
    h.remove[size_t(j)] = by_unmatch || by_overlap;
    h.suppress[size_t(j)] =
        meta.trk_keep_alive[size_t(j)] <= 0 && !cfg.suppress_unmatched_only_within_hotstart && !by_unmatch;
  }
  meta.overlap_pair_counts = std::move(pairs).release();
  return h;
}

std::vector<bool> choose_occlusion_suppression(const MaskStack& masks, const std::vector<int64_t>& last_occluded,
                                               bool reverse, const ControlConfig& cfg) {
  const int M = masks.count;
  std::vector<bool> suppress(size_t(M), false);
  if (M <= 1) return suppress;
  const auto iou = Matrix<float>::adopt(pairwise_overlap(masks, masks, Overlap::IoU), M, M);
  auto later = [&](int64_t a, int64_t b) { return reverse ? a < b : a > b; };
  const bool allow = cfg.allow_unoccluded_to_suppress;
  for (int i = 0; i < M; ++i)
    for (int j = i + 1; j < M; ++j) {
      if (iou(i, j) < cfg.suppress_overlapping_based_on_recent_occlusion_threshold) continue;
      const int64_t li = last_occluded[size_t(i)], lj = last_occluded[size_t(j)];
      if (later(li, lj) && (allow || lj > kNeverOccluded)) suppress[size_t(i)] = true;
      if (later(lj, li) && (allow || li > kNeverOccluded)) suppress[size_t(j)] = true;
    }
  return suppress;
}

ObjectChanges decide_object_changes(const Detections& det, const Tracks& trk, const Association& assoc,
                                    const HotstartChoice& hot, const std::vector<int64_t>& obj_ids, int64_t max_obj_id,
                                    const ControlConfig& cfg) {
  const int M = trk.count();
  ObjectChanges c;
  c.new_dets = assoc.new_dets;
  if (M + int(c.new_dets.size()) > cfg.effective_max_objects()) {
    const int keep_n = std::max(0, cfg.effective_max_objects() - M);
    c.dropped = int(c.new_dets.size()) - keep_n;
    std::stable_sort(c.new_dets.begin(), c.new_dets.end(),
                     [&](int a, int b) { return det.scores[size_t(a)] > det.scores[size_t(b)]; });
    c.new_dets.resize(static_cast<size_t>(keep_n));
  }
  for (size_t k = 0; k < c.new_dets.size(); ++k) c.new_ids.push_back(max_obj_id + 1 + int64_t(k));
  for (int j = 0; j < M; ++j)
    if (hot.remove[size_t(j)]) c.removed.push_back(trk.ids[size_t(j)]);
  for (int64_t id : obj_ids)
    if (std::find(c.removed.begin(), c.removed.end(), id) == c.removed.end()) c.ids_after.push_back(id);
  c.ids_after.insert(c.ids_after.end(), c.new_ids.begin(), c.new_ids.end());
  return c;
}

std::set<int64_t> matched_object_ids(const Detections& det, const Tracks& trk, const Association& assoc,
                                     const std::vector<int64_t>& new_ids) {
  std::set<int64_t> matched(new_ids.begin(), new_ids.end());
  for (int i = 0; i < det.count(); ++i)
    if (det.keep[size_t(i)])
      for (int j = 0; j < trk.count(); ++j)
        if (assoc.matched(i, j)) matched.insert(trk.ids[size_t(j)]);
  return matched;
}

void update_confirmation(HotstartMetadata& meta, const std::vector<int64_t>& ids_before,
                         const std::vector<int64_t>& ids_after, const std::set<int64_t>& matched,
                         const ControlConfig& cfg) {
  std::vector<int> status(ids_after.size(), kUnconfirmed);
  std::vector<int64_t> consecutive(ids_after.size(), 0);
  for (size_t k = 0; k < ids_after.size(); ++k) {
    auto it = std::find(ids_before.begin(), ids_before.end(), ids_after[k]);
    if (it != ids_before.end() && meta.confirmation_status.size() == ids_before.size()) {
      const size_t old = size_t(it - ids_before.begin());
      status[k] = meta.confirmation_status[old];
      consecutive[k] = meta.consecutive_det_num[old];
    }
  }
  if (cfg.masklet_confirmation_enable) {
    for (size_t k = 0; k < ids_after.size(); ++k) {
      consecutive[k] = matched.count(ids_after[k]) ? consecutive[k] + 1 : 0;
      if (consecutive[k] >= cfg.masklet_confirmation_consecutive_det_thresh) status[k] = kConfirmed;
    }
  }
  meta.confirmation_status = status;
  meta.consecutive_det_num = consecutive;
}

HotstartMetadata compact_metadata(const HotstartMetadata& meta, const std::vector<bool>& removed, size_t num_new,
                                  int frame_index, const ControlConfig& cfg) {
  const int M = int(removed.size());
  std::vector<int> keep;
  for (int j = 0; j < M; ++j)
    if (!removed[size_t(j)]) keep.push_back(j);
  HotstartMetadata m;
  m.confirmation_status = meta.confirmation_status;  // already per object after the frame
  m.consecutive_det_num = meta.consecutive_det_num;
  for (int j : keep) {
    m.obj_first_frame.push_back(meta.obj_first_frame[size_t(j)]);
    m.consecutive_unmatch_count.push_back(meta.consecutive_unmatch_count[size_t(j)]);
    m.trk_keep_alive.push_back(meta.trk_keep_alive[size_t(j)]);
    m.last_occluded.push_back(meta.last_occluded[size_t(j)]);
  }
  const auto old_pairs = Matrix<int64_t>::adopt(meta.overlap_pair_counts, M, M);
  const int n = int(keep.size() + num_new);
  Matrix<int64_t> pairs(n, n, 0);
  for (size_t a = 0; a < keep.size(); ++a)
    for (size_t b = 0; b < keep.size(); ++b) pairs(int(a), int(b)) = old_pairs(keep[a], keep[b]);
  m.overlap_pair_counts = std::move(pairs).release();
  for (size_t k = 0; k < num_new; ++k) {
    m.obj_first_frame.push_back(frame_index);
    m.consecutive_unmatch_count.push_back(0);
    m.trk_keep_alive.push_back(cfg.init_trk_keep_alive);
    m.last_occluded.push_back(kNeverOccluded);
  }
  return m;
}

}  // namespace segmux::pipeline
