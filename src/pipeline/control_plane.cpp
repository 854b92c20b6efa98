#include "pipeline/control_plane.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"

namespace segmux::pipeline {

namespace {
constexpr int64_t kNeverOccluded = -1;
constexpr int64_t kAlwaysOccluded = 100000;  // removed objects lose every occlusion comparison
constexpr float kRemovedScore = -1e4f;
constexpr int kUnconfirmed = 1;
constexpr int kConfirmed = 2;

std::vector<float> tensor_to_floats(const Tensor& t, const char* what) {
  SEGMUX_CHECK(t.defined(), what, ": tensor is missing");
  Tensor f = t.dtype() == DType::f32 ? t : t.cast(DType::f32);
  std::vector<float> v(static_cast<size_t>(f.numel()));
  if (!v.empty()) std::memcpy(v.data(), f.raw(), v.size() * sizeof(float));
  return v;
}

template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<int>& rows) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (int r : rows) out.push_back(v[size_t(r)]);
  return out;
}

Tensor masks_to_u8_tensor(const std::vector<BinaryMask>& masks, int h, int w) {
  Tensor t(DType::u8, {int64_t(masks.size()), h, w});
  auto* p = t.data<uint8_t>();
  for (size_t i = 0; i < masks.size(); ++i)
    std::memcpy(p + i * size_t(h) * size_t(w), masks[i].pixels.data(), size_t(h) * size_t(w));
  return t;
}
}  // namespace

const char* phase_name(FramePhase phase) {
  switch (phase) {
    case FramePhase::AddPrompt:
      return "add_prompt";
    case FramePhase::Propagate:
      return "propagate";
  }
  return "unknown";
}

VideoControlPlane::VideoControlPlane(ModelBackend& backend, FrameSource& frames, ControlConfig config)
    : backend_(backend), frames_(frames), cfg_(config), geo_(backend.geometry()) {
  SEGMUX_CHECK(geo_.low_res_mask_size > 0 && geo_.input_mask_size > 0, "backend reports mask sizes ",
               geo_.low_res_mask_size, " / ", geo_.input_mask_size);
  SEGMUX_CHECK(cfg_.bucket_capacity >= 1 && cfg_.bucket_capacity <= cfg_.multiplex_count,
               "control config: bucket capacity ", cfg_.bucket_capacity, " vs multiplex count ", cfg_.multiplex_count);
}

void VideoControlPlane::reset() {
  prompt_.reset();
  prompted_frames_.clear();
  for (const auto& s : states_) backend_.drop_state(s.id);
  states_.clear();
  obj_ids_.clear();
  max_obj_id_ = -1;
  obj_id_to_score_.clear();
  meta_ = HotstartMetadata{};
  cached_frames_.clear();
  backend_.reset();
}

TrackerStateView VideoControlPlane::view(const TrackerState& s) const {
  TrackerStateView v;
  v.state_id = s.id;
  v.obj_ids = s.obj_ids;
  v.buckets = s.buckets.slots();
  v.bucket_ids = s.buckets.bucket_ids();
  for (const auto& [f, m] : s.memory) v.memory_frames.push_back(m);
  v.num_frames = frames_.num_frames();
  return v;
}

std::vector<TrackerStateView> VideoControlPlane::tracker_state_views() const {
  std::vector<TrackerStateView> out;
  for (const auto& s : states_) out.push_back(view(s));
  return out;
}

void VideoControlPlane::ensure_frame_features(int frame_index) {
  SEGMUX_CHECK(frame_index >= 0 && frame_index < frames_.num_frames(), "frame ", frame_index,
               " is out of range for a video of ", frames_.num_frames(), " frames");
  // Bounded cache: only the frame being processed keeps backbone features (tracker memories keep
  // their own copy of image features), so at most one frame's features live at a time.
  for (auto it = cached_frames_.begin(); it != cached_frames_.end();) {
    if (*it != frame_index) {
      backend_.release_frame(*it);
      it = cached_frames_.erase(it);
    } else {
      ++it;
    }
  }
  if (!cached_frames_.count(frame_index)) {
    RgbFrame rgb = frames_.frame(frame_index);
    SEGMUX_CHECK(rgb.width == frames_.width() && rgb.height == frames_.height() &&
                     rgb.pixels.size() == size_t(rgb.width) * size_t(rgb.height) * 3,
                 "frame ", frame_index, " is ", rgb.width, "x", rgb.height, " with ", rgb.pixels.size(),
                 " bytes; the video is ", frames_.width(), "x", frames_.height());
    backend_.run_backbone(frame_index, rgb);
    cached_frames_.insert(frame_index);
  }
}

FrameOutput VideoControlPlane::add_text_prompt(int frame_index, const std::string& text) {
  SEGMUX_CHECK(frame_index >= 0 && frame_index < frames_.num_frames(), "add_prompt: frame ", frame_index,
               " is out of range for a video of ", frames_.num_frames(), " frames");
  reset();  // a text prompt resets the session (official add_prompt -> reset_state)
  prompt_ = text;
  prompted_frames_.insert(frame_index);
  backend_.encode_text({text, "visual", "geometric"});
  PendingFrame pending = process_frame(frame_index, false, FramePhase::AddPrompt);
  return postprocess(pending, {});
}

bool VideoControlPlane::remove_object(int64_t obj_id) {
  auto it = std::find(obj_ids_.begin(), obj_ids_.end(), obj_id);
  if (it == obj_ids_.end()) return false;
  size_t pos = size_t(it - obj_ids_.begin());
  remove_from_states({obj_id});
  obj_ids_.erase(it);
  auto erase_at = [pos](auto& v) {
    if (pos < v.size()) v.erase(v.begin() + long(pos));
  };
  erase_at(meta_.obj_first_frame);
  erase_at(meta_.consecutive_unmatch_count);
  erase_at(meta_.trk_keep_alive);
  erase_at(meta_.last_occluded);
  erase_at(meta_.confirmation_status);
  erase_at(meta_.consecutive_det_num);
  const size_t n = obj_ids_.size() + 1;
  if (meta_.overlap_pair_counts.size() == n * n) {
    std::vector<int64_t> m;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (i != pos && j != pos) m.push_back(meta_.overlap_pair_counts[i * n + j]);
    meta_.overlap_pair_counts = std::move(m);
  }
  obj_id_to_score_.erase(obj_id);
  return true;
}

void VideoControlPlane::remove_from_states(const std::vector<int64_t>& ids) {
  std::vector<TrackerState> kept;
  for (auto& s : states_) {
    std::vector<int> idx;
    std::vector<int64_t> removed;
    for (size_t i = 0; i < s.obj_ids.size(); ++i)
      if (std::find(ids.begin(), ids.end(), s.obj_ids[i]) != ids.end()) {
        idx.push_back(int(i));
        removed.push_back(s.obj_ids[i]);
      }
    if (idx.empty()) {
      kept.push_back(std::move(s));
      continue;
    }
    if (idx.size() == s.obj_ids.size()) {  // nothing left: the state goes away
      backend_.drop_state(s.id);
      continue;
    }
    s.buckets.remove_objects(idx);
    std::vector<int64_t> remaining;
    for (int64_t id : s.obj_ids)
      if (std::find(removed.begin(), removed.end(), id) == removed.end()) remaining.push_back(id);
    s.obj_ids = remaining;
    // Clear the removed objects' mask inputs; a conditioning frame without inputs left is downgraded
    // to an ordinary memory frame (official clear_all_points_in_frame).
    bool any_cond = false;
    for (auto& [f, m] : s.memory) {
      std::vector<int64_t> in;
      for (int64_t id : m.input_obj_ids)
        if (std::find(removed.begin(), removed.end(), id) == removed.end()) in.push_back(id);
      m.input_obj_ids = in;
      if (m.conditioning && in.empty()) m.conditioning = false;
      any_cond = any_cond || m.conditioning;
    }
    // The official tracker raises "No points are provided" on the next propagation when a state has
    // no conditioning frame left (objects added to an existing state later are stored as
    // non-conditioning inputs). Instead, the frames where the remaining objects received their mask
    // inputs become conditioning frames, so those objects keep being tracked.
    if (!any_cond)
      for (auto& [f, m] : s.memory)
        if (!m.input_obj_ids.empty()) m.conditioning = true;
    backend_.remove_objects(view(s), removed);
    kept.push_back(std::move(s));
  }
  states_ = std::move(kept);
}

void VideoControlPlane::add_new_objects(int frame_index, const std::vector<int64_t>& ids, const MaskStack& det_masks) {
  const int n = int(ids.size());
  // Best fit: the existing state with the fewest free slots that still holds all new objects.
  TrackerState* target = nullptr;
  int best = 1 << 30;
  for (auto& s : states_) {
    int avail = s.buckets.available_slots();
    if (avail >= n && avail < best) {
      best = avail;
      target = &s;
    }
  }
  if (target) {
    target->buckets.add_objects(n, false);
    target->obj_ids.insert(target->obj_ids.end(), ids.begin(), ids.end());
  } else {
    TrackerState s;
    s.id = next_state_id_++;
    s.obj_ids = ids;
    s.buckets = MultiplexBuckets(n, cfg_.bucket_capacity, cfg_.multiplex_count);
    states_.push_back(std::move(s));
    target = &states_.back();
  }
  // Detector masks -> input-mask resolution, binarised (official _tracker_add_new_objects).
  MaskStack hi = resize_bilinear(det_masks, geo_.input_mask_size, geo_.input_mask_size);
  std::vector<BinaryMask> bin;
  for (int i = 0; i < hi.count; ++i) bin.push_back(binarize(hi.mask(i), hi.height, hi.width));
  const bool conditioning = !target->tracked_frames.count(frame_index);
  MemoryFrame& mf = target->memory[frame_index];
  mf.frame_index = frame_index;
  mf.conditioning = mf.conditioning || conditioning;
  mf.input_obj_ids.insert(mf.input_obj_ids.end(), ids.begin(), ids.end());
  backend_.add_masks(view(*target), frame_index, ids, masks_to_u8_tensor(bin, hi.height, hi.width),
                     MaskInputKind::NewObjects, conditioning);
  target->tracked_frames.insert(frame_index);
}

VideoControlPlane::PendingFrame VideoControlPlane::process_frame(int frame_index, bool reverse, FramePhase phase) {
  SEGMUX_CHECK(prompt_.has_value(), "no prompt: add a prompt before running frames");
  FrameDecisions d;
  d.phase = phase_name(phase);
  d.frame_index = frame_index;
  d.tracker_obj_ids_before = obj_ids_;
  ensure_frame_features(frame_index);
  const int hm = geo_.low_res_mask_size;

  // ---- Step 1: detection, NMS, boundary suppression, kept-first order ----
  DetectorOutput det = backend_.detect(frame_index);
  std::vector<float> logits = tensor_to_floats(det.pred_logits, "detector pred_logits");
  std::vector<float> box_vals = tensor_to_floats(det.boxes_xyxy, "detector boxes");
  MaskStack det_masks_all = MaskStack::from_tensor(det.mask_logits, "detector mask logits");
  const int Q = int(logits.size());
  SEGMUX_CHECK(int(box_vals.size()) == 4 * Q && det_masks_all.count == Q, "detector output for frame ", frame_index,
               ": ", Q, " logits, ", box_vals.size() / 4, " boxes, ", det_masks_all.count, " masks");
  SEGMUX_CHECK(Q == 0 || (det_masks_all.height == hm && det_masks_all.width == hm), "detector masks are ",
               det_masks_all.height, "x", det_masks_all.width, ", expected ", hm, "x", hm);
  std::vector<std::array<float, 4>> boxes_all(static_cast<size_t>(Q));
  for (int q = 0; q < Q; ++q)
    for (int k = 0; k < 4; ++k) boxes_all[size_t(q)][size_t(k)] = box_vals[size_t(q) * 4 + size_t(k)];
  std::vector<float> probs(static_cast<size_t>(Q));
  for (int q = 0; q < Q; ++q) probs[size_t(q)] = sigmoidf(logits[size_t(q)]);
  if (cfg_.det_nms_thresh > 0.f) {
    auto keep = nms_masks(probs, det_masks_all, cfg_.score_threshold_detection, cfg_.det_nms_thresh,
                          cfg_.det_nms_use_iom ? Overlap::IoM : Overlap::IoU);
    for (int q = 0; q < Q; ++q)
      if (!keep[size_t(q)]) probs[size_t(q)] = sigmoidf(logits[size_t(q)] - 1e4f);
  }
  std::vector<bool> pos(static_cast<size_t>(Q));
  for (int q = 0; q < Q; ++q) pos[size_t(q)] = probs[size_t(q)] > cfg_.score_threshold_detection;
  if (cfg_.suppress_det_close_to_boundary) {
    auto away = boxes_away_from_boundary(boxes_all, cfg_.boundary_margin);
    for (int q = 0; q < Q; ++q) pos[size_t(q)] = pos[size_t(q)] && away[size_t(q)];
  }
  for (int q = 0; q < Q; ++q)
    if (pos[size_t(q)]) d.det_kept_queries.push_back(q);
  std::vector<int> order = keep_first_order(pos);
  d.det_order = order;
  std::vector<float> det_scores = pick(probs, order);
  std::vector<bool> det_keep;
  for (int q : order) det_keep.push_back(pos[size_t(q)]);
  MaskStack det_masks = det_masks_all.select(order);

  // ---- Step 2: tracker propagation of every state ----
  std::vector<std::pair<int64_t, int>> trk_rows;  // (obj id, row in the concatenated outputs)
  MaskStack trk_cat(0, hm, hm);
  std::vector<float> trk_scores_cat;
  for (auto& s : states_) {
    if (s.obj_ids.empty()) continue;
    TrackerOutput out = backend_.propagate(view(s), frame_index, reverse);
    MaskStack m = MaskStack::from_tensor(out.low_res_masks, "tracker low-res masks");
    std::vector<float> sc = tensor_to_floats(out.object_score_logits, "tracker object scores");
    SEGMUX_CHECK(m.count == int(s.obj_ids.size()) && sc.size() == s.obj_ids.size(), "tracker state ", s.id, " has ",
                 s.obj_ids.size(), " objects but propagation returned ", m.count, " masks and ", sc.size(), " scores");
    SEGMUX_CHECK(m.height == hm && m.width == hm, "tracker masks are ", m.height, "x", m.width, ", expected ", hm);
    for (size_t i = 0; i < s.obj_ids.size(); ++i) trk_rows.emplace_back(s.obj_ids[i], trk_cat.count + int(i));
    trk_cat.append(m);
    trk_scores_cat.insert(trk_scores_cat.end(), sc.begin(), sc.end());
    s.tracked_frames.insert(frame_index);
  }
  std::sort(trk_rows.begin(), trk_rows.end());
  std::vector<int> rows;
  std::vector<int64_t> trk_ids;
  for (auto& [id, r] : trk_rows) {
    trk_ids.push_back(id);
    rows.push_back(r);
  }
  SEGMUX_CHECK(trk_ids == obj_ids_, "tracker states hold objects that differ from the tracked object list");
  MaskStack trk_masks = trk_cat.select(rows);
  std::vector<float> trk_scores = pick(trk_scores_cat, rows);
  fill_holes_in_mask_scores(trk_masks, cfg_.fill_hole_area);
  const int M = trk_masks.count;
  const int N = Q;

  // ---- Step 3: association ----
  const float new_thresh = cfg_.new_det_thresh;
  std::vector<bool> trk_unmatched(size_t(M), false), trk_nonempty(size_t(M), false), is_new(size_t(N), false);
  std::vector<uint8_t> im(size_t(N) * size_t(M), 0);  // detection d matched to track j (>= assoc thresh)
  std::vector<int> det_argmax(size_t(N), 0);
  std::vector<bool> det_high_conf(size_t(N), false), det_high_iou(size_t(N), false);
  for (int j = 0; j < M; ++j) {
    const float* p = trk_masks.mask(j);
    trk_nonempty[size_t(j)] = std::any_of(p, p + trk_masks.plane(), [](float v) { return v > 0.f; });
  }
  if (M == 0) {
    for (int i = 0; i < N; ++i) is_new[size_t(i)] = det_scores[size_t(i)] >= new_thresh && det_keep[size_t(i)];
  } else if (N == 0) {
    std::fill(trk_unmatched.begin(), trk_unmatched.end(), true);  // official: all unmatched
  } else {
    MaskStack dm = det_masks, tm = trk_masks;
    if (dm.height != tm.height || dm.width != tm.width) {
      if (size_t(dm.height) * size_t(dm.width) < size_t(tm.height) * size_t(tm.width))
        tm = resize_bilinear(tm, dm.height, dm.width);
      else
        dm = resize_bilinear(dm, tm.height, tm.width);
    }
    const Overlap kind = cfg_.use_iom_recondition ? Overlap::IoM : Overlap::IoU;
    std::vector<float> metric = pairwise_overlap(dm, tm, kind, &det_keep);
    auto at = [&](int i, int j) -> float& { return metric[size_t(i) * size_t(M) + size_t(j)]; };
    for (int j = 0; j < M; ++j) {
      bool matched = false;
      for (int i = 0; i < N; ++i) matched = matched || at(i, j) >= cfg_.trk_assoc_iou_thresh;
      trk_unmatched[size_t(j)] = trk_nonempty[size_t(j)] && !matched;
    }
    for (int i = 0; i < N; ++i) {
      bool any = false;
      for (int j = 0; j < M; ++j) any = any || at(i, j) >= cfg_.assoc_iou_thresh;
      is_new[size_t(i)] = det_scores[size_t(i)] >= new_thresh && det_keep[size_t(i)] && !any;
    }
    const float rec_thresh = cfg_.use_iom_recondition ? cfg_.iom_thresh_recondition : cfg_.iou_thresh_recondition;
    std::vector<bool> det_many(static_cast<size_t>(N)), trk_many(static_cast<size_t>(M));
    for (int i = 0; i < N; ++i) {
      int c = 0;
      for (int j = 0; j < M; ++j) c += at(i, j) >= rec_thresh;
      det_many[size_t(i)] = c > 1;
    }
    for (int j = 0; j < M; ++j) {
      int c = 0;
      for (int i = 0; i < N; ++i) c += at(i, j) >= rec_thresh;
      trk_many[size_t(j)] = c > 1;
    }
    // Ambiguous pairs are zeroed before the matched-track lists are read off (official order).
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < M; ++j)
        if (trk_many[size_t(j)] || det_many[size_t(i)]) at(i, j) = 0.f;
    for (int i = 0; i < N; ++i) {
      int best = 0;
      for (int j = 1; j < M; ++j)
        if (at(i, j) > at(i, best)) best = j;
      det_argmax[size_t(i)] = best;
      det_high_conf[size_t(i)] =
          det_scores[size_t(i)] >= cfg_.high_conf_thresh && det_keep[size_t(i)] && !is_new[size_t(i)];
      det_high_iou[size_t(i)] = at(i, best) >= rec_thresh;
      for (int j = 0; j < M; ++j) im[size_t(i) * size_t(M) + size_t(j)] = at(i, j) >= cfg_.assoc_iou_thresh;
    }
  }
  std::vector<int> new_det_inds;
  for (int i = 0; i < N; ++i)
    if (is_new[size_t(i)]) new_det_inds.push_back(i);
  for (int j = 0; j < M; ++j)
    if (trk_unmatched[size_t(j)]) d.unmatched_trk_obj_ids.push_back(trk_ids[size_t(j)]);
  std::vector<std::pair<int64_t, int>> recond_candidates;  // dict order of the official code
  for (int i = 0; i < N; ++i) {
    if (!det_keep[size_t(i)]) continue;
    auto& list = d.det_to_matched_trk_obj_ids[i];
    for (int j = 0; j < M; ++j)
      if (im[size_t(i) * size_t(M) + size_t(j)]) list.push_back(trk_ids[size_t(j)]);
    if (M > 0 && det_high_conf[size_t(i)] && det_high_iou[size_t(i)]) {
      int64_t tid = trk_ids[size_t(det_argmax[size_t(i)])];
      auto it = std::find_if(recond_candidates.begin(), recond_candidates.end(),
                             [&](const auto& p) { return p.first == tid; });
      if (it != recond_candidates.end())
        it->second = i;
      else
        recond_candidates.emplace_back(tid, i);
      d.trk_id_to_max_iou_high_conf_det[tid] = i;
    }
  }

  // ---- Step 4: hot start (position-indexed metadata, official _process_hotstart_gpu) ----
  std::vector<bool> to_remove(size_t(M), false), to_suppress(size_t(M), false);
  if (M > 0) {
    SEGMUX_CHECK(meta_.obj_first_frame.size() == size_t(M), "hot-start metadata holds ", meta_.obj_first_frame.size(),
                 " objects, the tracker ", M);
    auto& ka = meta_.trk_keep_alive;
    auto& unmatch = meta_.consecutive_unmatch_count;
    auto& overlap = meta_.overlap_pair_counts;
    for (int j = 0; j < M; ++j) {
      bool matched = false;
      for (int i = 0; i < N; ++i) matched = matched || im[size_t(i) * size_t(M) + size_t(j)];
      int64_t v = ka[size_t(j)] + (matched ? 1 : -1);
      v = std::clamp<int64_t>(v, cfg_.min_trk_keep_alive, cfg_.max_trk_keep_alive);
      if (cfg_.decrease_trk_keep_alive_for_empty_masklets && !trk_nonempty[size_t(j)])
        v = std::max<int64_t>(v - 1, cfg_.min_trk_keep_alive);
      ka[size_t(j)] = v;
      if (trk_unmatched[size_t(j)]) ++unmatch[size_t(j)];  // total, never reset
    }
    for (int i = 0; i < N; ++i) {
      int c = 0;
      for (int j = 0; j < M; ++j) c += im[size_t(i) * size_t(M) + size_t(j)];
      if (c < 2) continue;
      for (int a = 0; a < M; ++a)
        for (int b = a + 1; b < M; ++b)
          if (im[size_t(i) * size_t(M) + size_t(a)] && im[size_t(i) * size_t(M) + size_t(b)])
            ++overlap[size_t(a) * size_t(M) + size_t(b)];
    }
    const int64_t hot_diff = reverse ? frame_index + cfg_.hotstart_delay : frame_index - cfg_.hotstart_delay;
    for (int j = 0; j < M; ++j) {
      const int64_t first = meta_.obj_first_frame[size_t(j)];
      const bool within = reverse ? first < hot_diff : first > hot_diff;
      const bool by_unmatch = within && unmatch[size_t(j)] >= cfg_.hotstart_unmatch_thresh;
      int64_t max_overlap = 0;
      for (int i = 0; i < M; ++i) {
        const int64_t fi = meta_.obj_first_frame[size_t(i)];
        const bool earlier = reverse ? fi > first : fi < first;
        if (earlier) max_overlap = std::max(max_overlap, overlap[size_t(i) * size_t(M) + size_t(j)]);
      }
      const bool by_overlap = within && max_overlap >= cfg_.hotstart_dup_thresh;
      to_remove[size_t(j)] = by_unmatch || by_overlap;
      to_suppress[size_t(j)] = ka[size_t(j)] <= 0 && !cfg_.suppress_unmatched_only_within_hotstart && !by_unmatch;
      if (to_suppress[size_t(j)]) d.keep_alive_suppressed_obj_ids.push_back(trk_ids[size_t(j)]);
    }
  }

  // ---- Step 5: reconditioning from high-confidence detections ----
  std::set<int64_t> reconditioned;
  if (cfg_.recondition_every_nth_frame > 0 && frame_index % cfg_.recondition_every_nth_frame == 0 &&
      !recond_candidates.empty()) {
    std::vector<std::pair<int64_t, int>> valid;
    for (auto& [tid, di] : recond_candidates) {
      size_t j = size_t(std::find(trk_ids.begin(), trk_ids.end(), tid) - trk_ids.begin());
      if (sigmoidf(trk_scores[j]) > cfg_.high_conf_thresh) valid.emplace_back(tid, di);
    }
    std::vector<std::pair<size_t, std::vector<std::pair<int64_t, int>>>> per_state;  // first-seen order
    for (auto& [tid, di] : valid) {
      size_t j = size_t(std::find(trk_ids.begin(), trk_ids.end(), tid) - trk_ids.begin());
      float* old_mask = trk_masks.mask(int(j));
      const float* new_mask = det_masks.mask(di);
      for (size_t k = 0; k < trk_masks.plane(); ++k)
        if ((new_mask[k] > 0.f) != (old_mask[k] > 0.f)) old_mask[k] = new_mask[k];
      for (size_t si = 0; si < states_.size(); ++si) {
        auto& ids = states_[si].obj_ids;
        if (std::find(ids.begin(), ids.end(), tid) == ids.end()) continue;
        auto it = std::find_if(per_state.begin(), per_state.end(), [&](const auto& p) { return p.first == si; });
        if (it == per_state.end())
          per_state.push_back({si, {{tid, di}}});
        else
          it->second.emplace_back(tid, di);
        break;
      }
    }
    fill_holes_in_mask_scores(trk_masks, cfg_.fill_hole_area);
    for (auto& [si, list] : per_state) {
      TrackerState& s = states_[si];
      std::vector<int64_t> ids;
      std::vector<int> det_rows;
      for (auto& [tid, di] : list) {
        ids.push_back(tid);
        det_rows.push_back(di);
      }
      MaskStack hi = resize_bilinear(det_masks.select(det_rows), geo_.input_mask_size, geo_.input_mask_size);
      std::vector<BinaryMask> bin;
      for (int i = 0; i < hi.count; ++i) bin.push_back(binarize(hi.mask(i), hi.height, hi.width));
      const bool conditioning = !s.tracked_frames.count(frame_index);
      MemoryFrame& mf = s.memory[frame_index];
      mf.frame_index = frame_index;
      mf.conditioning = mf.conditioning || conditioning;
      for (int64_t id : ids)
        if (std::find(mf.input_obj_ids.begin(), mf.input_obj_ids.end(), id) == mf.input_obj_ids.end())
          mf.input_obj_ids.push_back(id);
      backend_.add_masks(view(s), frame_index, ids, masks_to_u8_tensor(bin, hi.height, hi.width),
                         MaskInputKind::Recondition, conditioning);
      reconditioned.insert(s.obj_ids.begin(), s.obj_ids.end());
    }
  }
  d.reconditioned_obj_ids.assign(reconditioned.begin(), reconditioned.end());

  // ---- Step 6: occlusion-based overlap suppression, then memory encoding ----
  if (M > 0) {
    if (cfg_.suppress_overlapping_based_on_recent_occlusion_threshold > 0.f) {
      std::vector<int64_t> last = meta_.last_occluded;
      for (int j = 0; j < M; ++j)
        if (to_remove[size_t(j)]) last[size_t(j)] = kAlwaysOccluded;
      std::vector<bool> suppress(size_t(M), false);
      if (M > 1) {
        std::vector<float> iou = pairwise_overlap(trk_masks, trk_masks, Overlap::IoU);
        auto later = [&](int64_t a, int64_t b) { return reverse ? a < b : a > b; };
        for (int i = 0; i < M; ++i)
          for (int j = i + 1; j < M; ++j) {
            if (iou[size_t(i) * size_t(M) + size_t(j)] < cfg_.suppress_overlapping_based_on_recent_occlusion_threshold)
              continue;
            const int64_t li = last[size_t(i)], lj = last[size_t(j)];
            const bool allow = cfg_.allow_unoccluded_to_suppress;
            if (later(li, lj) && (allow || lj > kNeverOccluded)) suppress[size_t(i)] = true;
            if (later(lj, li) && (allow || li > kNeverOccluded)) suppress[size_t(j)] = true;
          }
      }
      for (int j = 0; j < M; ++j) {
        if (!trk_nonempty[size_t(j)] || suppress[size_t(j)]) last[size_t(j)] = frame_index;
        if (suppress[size_t(j)]) {
          d.occlusion_suppressed_obj_ids.push_back(trk_ids[size_t(j)]);
          float* p = trk_masks.mask(j);
          std::fill(p, p + trk_masks.plane(), -10.f);
        }
      }
      meta_.last_occluded = last;
    }
    d.memory_update_low_res_masks = trk_masks;
    MaskStack hi = resize_bilinear(trk_masks, geo_.input_mask_size, geo_.input_mask_size);
    hi = suppress_area_shrinkage(hi);
    std::vector<float> obj_logits(static_cast<size_t>(M));
    for (int j = 0; j < M; ++j) {
      const float* p = hi.mask(j);
      obj_logits[size_t(j)] = std::any_of(p, p + hi.plane(), [](float v) { return v > 0.f; }) ? 10.f : -10.f;
    }
    for (auto& s : states_) {
      if (s.obj_ids.empty()) continue;
      std::vector<int> srows;
      for (int64_t id : s.obj_ids)
        srows.push_back(int(std::find(trk_ids.begin(), trk_ids.end(), id) - trk_ids.begin()));
      std::vector<float> sl = pick(obj_logits, srows);
      MemoryFrame& mf = s.memory[frame_index];
      mf.frame_index = frame_index;
      backend_.encode_memory(view(s), frame_index, hi.select(srows).to_tensor(),
                             Tensor::from_vector<float>({int64_t(sl.size())}, sl));
    }
  }

  // ---- Step 7: new object ids (count cap), removals, metadata ----
  int dropped = 0;
  if (M + int(new_det_inds.size()) > cfg_.effective_max_objects()) {
    int keep_n = std::max(0, cfg_.effective_max_objects() - M);
    dropped = int(new_det_inds.size()) - keep_n;
    std::vector<int> by_score = new_det_inds;
    std::stable_sort(by_score.begin(), by_score.end(),
                     [&](int a, int b) { return det_scores[size_t(a)] > det_scores[size_t(b)]; });
    by_score.resize(static_cast<size_t>(keep_n));
    new_det_inds = by_score;
  }
  std::vector<int64_t> new_ids;
  for (size_t k = 0; k < new_det_inds.size(); ++k) new_ids.push_back(max_obj_id_ + 1 + int64_t(k));
  d.new_det_fa_inds = new_det_inds;
  d.new_det_obj_ids = new_ids;
  d.num_obj_dropped_due_to_limit = dropped;
  std::vector<int64_t> removed;
  for (int j = 0; j < M; ++j)
    if (to_remove[size_t(j)]) removed.push_back(trk_ids[size_t(j)]);
  d.obj_ids_newly_removed = removed;

  std::vector<int64_t> ids_after;
  for (int64_t id : obj_ids_)
    if (std::find(removed.begin(), removed.end(), id) == removed.end()) ids_after.push_back(id);
  ids_after.insert(ids_after.end(), new_ids.begin(), new_ids.end());
  std::map<int64_t, float> sam2_scores;
  for (size_t k = 0; k < new_ids.size(); ++k) {
    obj_id_to_score_[new_ids[k]] = det_scores[size_t(new_det_inds[k])];
    sam2_scores[new_ids[k]] = det_scores[size_t(new_det_inds[k])];
  }
  if (!new_ids.empty()) max_obj_id_ = std::max(max_obj_id_, new_ids.back());
  for (int64_t id : removed) {
    obj_id_to_score_[id] = kRemovedScore;
    sam2_scores[id] = kRemovedScore;
  }
  // Tracker probabilities of all previously tracked objects (the removed ones included) overwrite
  // the frame's scores, as the official code does after building the outputs.
  for (int j = 0; j < M; ++j) sam2_scores[trk_ids[size_t(j)]] = sigmoidf(trk_scores[size_t(j)]);

  // Masklet confirmation (consecutive frames matched by a detection, new objects count as matched).
  {
    std::vector<int> status(ids_after.size(), kUnconfirmed);
    std::vector<int64_t> consecutive(ids_after.size(), 0);
    for (size_t k = 0; k < ids_after.size(); ++k) {
      auto it = std::find(obj_ids_.begin(), obj_ids_.end(), ids_after[k]);
      if (it != obj_ids_.end() && meta_.confirmation_status.size() == obj_ids_.size()) {
        size_t old = size_t(it - obj_ids_.begin());
        status[k] = meta_.confirmation_status[old];
        consecutive[k] = meta_.consecutive_det_num[old];
      }
    }
    if (cfg_.masklet_confirmation_enable) {
      std::set<int64_t> matched(new_ids.begin(), new_ids.end());
      for (auto& [di, list] : d.det_to_matched_trk_obj_ids) matched.insert(list.begin(), list.end());
      for (size_t k = 0; k < ids_after.size(); ++k) {
        consecutive[k] = matched.count(ids_after[k]) ? consecutive[k] + 1 : 0;
        if (consecutive[k] >= cfg_.masklet_confirmation_consecutive_det_thresh) status[k] = kConfirmed;
      }
    }
    meta_.confirmation_status = status;
    meta_.consecutive_det_num = consecutive;
  }
  // Compact the position-indexed metadata (drop removed) and extend it for the new objects.
  {
    std::vector<int> keep_pos;
    for (int j = 0; j < M; ++j)
      if (!to_remove[size_t(j)]) keep_pos.push_back(j);
    HotstartMetadata m;
    m.confirmation_status = meta_.confirmation_status;
    m.consecutive_det_num = meta_.consecutive_det_num;
    for (int j : keep_pos) {
      m.obj_first_frame.push_back(meta_.obj_first_frame[size_t(j)]);
      m.consecutive_unmatch_count.push_back(meta_.consecutive_unmatch_count[size_t(j)]);
      m.trk_keep_alive.push_back(meta_.trk_keep_alive[size_t(j)]);
      m.last_occluded.push_back(meta_.last_occluded[size_t(j)]);
    }
    const size_t n_new = keep_pos.size() + new_ids.size();
    m.overlap_pair_counts.assign(n_new * n_new, 0);
    for (size_t a = 0; a < keep_pos.size(); ++a)
      for (size_t b = 0; b < keep_pos.size(); ++b)
        m.overlap_pair_counts[a * n_new + b] =
            meta_.overlap_pair_counts[size_t(keep_pos[a]) * size_t(M) + size_t(keep_pos[b])];
    for (size_t k = 0; k < new_ids.size(); ++k) {
      m.obj_first_frame.push_back(frame_index);
      m.consecutive_unmatch_count.push_back(0);
      m.trk_keep_alive.push_back(cfg_.init_trk_keep_alive);
      m.last_occluded.push_back(kNeverOccluded);
    }
    meta_ = std::move(m);
  }

  // ---- Step 8: execute the plan on the tracker states ----
  if (!new_ids.empty()) add_new_objects(frame_index, new_ids, det_masks.select(new_det_inds));
  if (!removed.empty()) remove_from_states(removed);
  obj_ids_ = ids_after;

  // ---- Step 9: outputs of this frame (video resolution, before post-processing) ----
  const int H = frames_.height(), W = frames_.width();
  PendingFrame pending;
  pending.frame_index = frame_index;
  std::vector<float> plane(size_t(H) * size_t(W));
  for (int j = 0; j < M; ++j) {
    resize_bilinear(trk_masks.mask(j), hm, hm, plane.data(), H, W);
    pending.masks[trk_ids[size_t(j)]] = rle_encode(binarize(plane.data(), H, W));
  }
  if (!new_ids.empty()) {
    MaskStack nm = det_masks.select(new_det_inds);
    fill_holes_in_mask_scores(nm, cfg_.fill_hole_area);
    for (size_t k = 0; k < new_ids.size(); ++k) {
      resize_bilinear(nm.mask(int(k)), nm.height, nm.width, plane.data(), H, W);
      pending.masks[new_ids[k]] = rle_encode(binarize(plane.data(), H, W));
    }
  }
  for (auto& [id, m] : pending.masks) pending.obj_ids.push_back(id);
  pending.scores = obj_id_to_score_;
  pending.sam2_scores = sam2_scores;
  if (cfg_.hide_keep_alive_suppressed_objects) pending.suppressed = d.keep_alive_suppressed_obj_ids;
  pending.stats = {int(ids_after.size()), dropped};

  d.obj_ids_after = ids_after;
  d.obj_id_to_score = obj_id_to_score_;
  d.masklet_confirmation_status = meta_.confirmation_status;
  d.stats = pending.stats;
  d.max_obj_id = max_obj_id_;
  for (auto& s : states_) d.tracker_states.push_back({s.obj_ids, s.buckets.slots()});
  d.build_outputs_obj_ids = pending.obj_ids;
  d.build_outputs_masks = pending.masks;
  d.metadata_after = meta_;
  decisions_.push_back(std::move(d));
  return pending;
}

FrameOutput VideoControlPlane::postprocess(const PendingFrame& f, const std::set<int64_t>& hidden) const {
  FrameOutput out;
  out.frame_index = f.frame_index;
  out.stats = f.stats;
  const int H = frames_.height(), W = frames_.width();
  std::vector<float> sam2;
  for (int64_t id : f.obj_ids) {
    if (hidden.count(id) || std::find(f.suppressed.begin(), f.suppressed.end(), id) != f.suppressed.end()) continue;
    BinaryMask m = rle_decode(f.masks.at(id));
    if (m.area() == 0) continue;
    auto box = mask_to_box_xyxy(m);  // boxes come from masks before the non-overlap step
    out.obj_ids.push_back(id);
    auto sc = f.scores.find(id);
    out.probs.push_back(sc == f.scores.end() ? 0.f : sc->second);
    auto s2 = f.sam2_scores.find(id);
    sam2.push_back(s2 == f.sam2_scores.end() ? 0.f : s2->second);
    out.boxes_xywh.push_back(
        {box[0] / float(W), box[1] / float(H), (box[2] - box[0]) / float(W), (box[3] - box[1]) / float(H)});
    out.masks.push_back(std::move(m));
  }
  object_wise_non_overlap(out.masks, sam2);
  return out;
}

void VideoControlPlane::propagate(int start_frame, int max_frames, bool reverse,
                                  const std::function<bool(FrameOutput)>& sink) {
  SEGMUX_CHECK(prompt_.has_value(), "propagate_in_video: no prompt was added");
  const int num_frames = frames_.num_frames();
  if (start_frame < 0) start_frame = *prompted_frames_.begin();
  SEGMUX_CHECK(start_frame < num_frames, "propagate_in_video: start frame ", start_frame, " is out of range for ",
               num_frames, " frames");
  if (max_frames < 0) max_frames = num_frames;
  std::vector<int> order;
  int end_frame;
  if (reverse) {
    end_frame = std::max(start_frame - max_frames, 0);
    for (int f = start_frame - 1; f >= end_frame; --f) order.push_back(f);
  } else {
    end_frame = std::min(start_frame + max_frames, num_frames - 1);
    for (int f = start_frame; f <= end_frame; ++f) order.push_back(f);
  }
  const int delay = cfg_.masklet_confirmation_consecutive_det_thresh - 1;
  std::map<int, std::vector<int64_t>> unconfirmed;  // per propagation call, as officially
  std::set<int64_t> removed_so_far;
  std::vector<PendingFrame> hot_buffer;
  std::vector<std::pair<PendingFrame, std::set<int64_t>>> post_buffer;
  bool stop = false;

  auto flush_batch = [&](size_t count) {
    for (size_t k = 0; k < count && !post_buffer.empty(); ++k) {
      auto item = std::move(post_buffer.front());
      post_buffer.erase(post_buffer.begin());
      std::set<int64_t> hidden = cfg_.hide_removed_objects_retroactively ? item.second : std::set<int64_t>{};
      int lookup = reverse ? item.first.frame_index - delay : item.first.frame_index + delay;
      lookup = std::clamp(lookup, 0, num_frames - 1);
      auto it = unconfirmed.find(lookup);
      if (cfg_.masklet_confirmation_enable && it != unconfirmed.end())
        hidden.insert(it->second.begin(), it->second.end());
      if (!stop && !sink(postprocess(item.first, hidden))) stop = true;
    }
  };

  for (int frame : order) {
    if (stop) break;
    PendingFrame pf = process_frame(frame, reverse, FramePhase::Propagate);
    prompted_frames_.insert(frame);  // this frame now has outputs (official previous_stages_out)
    if (cfg_.masklet_confirmation_enable) {
      std::vector<int64_t> unc;
      for (size_t k = 0; k < obj_ids_.size(); ++k)
        if (meta_.confirmation_status[k] == kUnconfirmed) unc.push_back(obj_ids_[k]);
      unconfirmed[frame] = unc;
    }
    const auto& last = decisions_.back();
    removed_so_far.insert(last.obj_ids_newly_removed.begin(), last.obj_ids_newly_removed.end());
    std::vector<PendingFrame> ready;
    if (cfg_.hotstart_delay > 0) {
      hot_buffer.push_back(std::move(pf));
      if (frame == end_frame) {
        ready = std::move(hot_buffer);
        hot_buffer.clear();
      } else if (int(hot_buffer.size()) >= cfg_.hotstart_delay) {
        ready.push_back(std::move(hot_buffer.front()));
        hot_buffer.erase(hot_buffer.begin());
      }
    } else {
      ready.push_back(std::move(pf));
    }
    for (auto& r : ready) post_buffer.emplace_back(std::move(r), removed_so_far);
    while (int(post_buffer.size()) >= cfg_.postprocess_batch_size && !stop)
      flush_batch(static_cast<size_t>(cfg_.postprocess_batch_size));
  }
  if (!stop) flush_batch(post_buffer.size());
}

}  // namespace segmux::pipeline
