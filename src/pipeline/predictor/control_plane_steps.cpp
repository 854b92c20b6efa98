// VideoControlPlane::process_frame: one frame as a sequence of named steps over a FrameWork, in the
// official order. run_* steps run the models (model session), apply_* steps carry decisions out on the
// tracker states (model session); the steps in between decide (functions of control_plane_frame.h) and keep
// the control plane's own bookkeeping (object list, scores, hot-start metadata).
#include <algorithm>
#include <iterator>
#include <set>

#include "pipeline/predictor/control_plane.h"
#include "pipeline/predictor/control_plane_frame.h"

namespace segmux::pipeline {

VideoControlPlane::PendingFrame VideoControlPlane::process_frame(int frame_index, bool reverse, FramePhase phase,
                                                                 const std::vector<sam31::BoxExemplar>& boxes) {
  SEGMUX_CHECK(prompt_.has_value() || !obj_ids_.empty(), "no prompt: add a prompt before running frames");
  FrameWork w;
  w.frame_index = frame_index;
  w.reverse = reverse;
  w.phase = phase;
  w.boxes = boxes;
  w.record.phase = phase_name(phase);
  w.record.frame_index = frame_index;
  w.record.tracker_obj_ids_before = obj_ids_;
  ensure_frame_features(frame_index);  // model: backbone
  if (prompt_)
    run_detector(w);  // model: detector (none without a text prompt: points only)
  else
    w.det.masks = MaskStack(0, geo_.low_res_mask_size, geo_.low_res_mask_size);
  run_tracker(w);  // model: propagation of every state
  match_detections(w);
  update_hotstart(w);
  plan_reconditioning(w);
  apply_reconditioning(w);  // model: mask inputs of reconditioned tracks
  suppress_recent_occlusions(w);
  apply_memory_encoding(w);  // model: memory encoder
  plan_object_changes(w);
  update_object_metadata(w);
  apply_object_changes(w);  // model: mask inputs of new objects, removals
  PendingFrame pending = build_outputs(w);
  record_frame(w, pending);
  return pending;
}

// Detector, NMS, boundary suppression, kept-first order.
void VideoControlPlane::run_detector(FrameWork& w) {
  const NmsVariant nms = w.phase == FramePhase::AddPrompt ? NmsVariant::single_frame : NmsVariant::batched;
  w.det = select_detections(model_.detect(w.frame_index, text_batch(), w.boxes), w.frame_index, geo_.low_res_mask_size,
                            cfg_, nms);
  w.record.det_kept_queries = w.det.kept_queries;
  w.record.det_order = w.det.order;
}

// Propagation of every tracker state; the tracks ordered by object id.
void VideoControlPlane::run_tracker(FrameWork& w) {
  const int hm = geo_.low_res_mask_size;
  std::vector<std::pair<int64_t, int>> rows;  // (obj id, row in the concatenated outputs)
  MaskStack masks(0, hm, hm);
  std::vector<float> scores;
  for (auto& s : states_) {
    if (s.obj_ids.empty()) continue;
    // Official: only the interactive propagation runs after a user's prompt, so a full propagation never
    // meets appended entries (its memory update would not fit them: mux of the state's objects only).
    SEGMUX_CHECK(s.extra_slots.empty(), "tracker state ", s.id,
                 " holds a mask prompt for an existing object; only the interactive propagation can track it");
    TrackerOutput out = model_.propagate(view(s), w.frame_index, w.reverse);
    MaskStack m = MaskStack::from_tensor(out.low_res_masks, "tracker low-res masks");
    std::vector<float> sc = tensor_to_floats(out.object_score_logits, "tracker object scores");
    SEGMUX_CHECK(m.count == int(s.obj_ids.size()) && sc.size() == s.obj_ids.size(), "tracker state ", s.id, " has ",
                 s.obj_ids.size(), " objects but propagation returned ", m.count, " masks and ", sc.size(), " scores");
    SEGMUX_CHECK(m.height == hm && m.width == hm, "tracker masks are ", m.height, "x", m.width, ", expected ", hm);
    for (size_t i = 0; i < s.obj_ids.size(); ++i) rows.emplace_back(s.obj_ids[i], masks.count + int(i));
    masks.append(m);
    scores.insert(scores.end(), sc.begin(), sc.end());
    s.tracked_frames.insert(w.frame_index);
    s.propagated_frames.insert(w.frame_index);
    s.output_entries[w.frame_index] = s.num_entries();
  }
  std::sort(rows.begin(), rows.end());
  std::vector<int> order;
  for (auto& [id, r] : rows) {
    w.trk.ids.push_back(id);
    order.push_back(r);
  }
  SEGMUX_CHECK(w.trk.ids == obj_ids_, "tracker states hold objects that differ from the tracked object list");
  w.trk.masks = masks.select(order);
  w.trk.score_logits = pick(scores, order);
  fill_holes_in_mask_scores(w.trk.masks, cfg_.fill_hole_area);
}

void VideoControlPlane::match_detections(FrameWork& w) const {
  w.assoc = associate(w.det, w.trk, cfg_);
  FrameDecisions& d = w.record;
  for (int j = 0; j < w.trk.count(); ++j)
    if (w.assoc.trk_unmatched[size_t(j)]) d.unmatched_trk_obj_ids.push_back(w.trk.ids[size_t(j)]);
  for (int i = 0; i < w.det.count(); ++i) {
    if (!w.det.keep[size_t(i)]) continue;
    auto& list = d.det_to_matched_trk_obj_ids[i];
    for (int j = 0; j < w.trk.count(); ++j)
      if (w.assoc.matched(i, j)) list.push_back(w.trk.ids[size_t(j)]);
  }
  for (const auto& [track_id, det] : w.assoc.recondition_candidates) d.trk_id_to_max_iou_high_conf_det[track_id] = det;
}

void VideoControlPlane::update_hotstart(FrameWork& w) {
  w.hot = decide_hotstart(meta_, w.assoc, w.frame_index, w.reverse, cfg_);
  for (int j = 0; j < w.trk.count(); ++j)  // objects the user prompted are never removed by hot start
    if (user_objects_.count(w.trk.ids[size_t(j)])) w.hot.remove[size_t(j)] = false;
  for (int j = 0; j < w.trk.count(); ++j)
    if (w.hot.suppress[size_t(j)]) w.record.keep_alive_suppressed_obj_ids.push_back(w.trk.ids[size_t(j)]);
}

// Every recondition_every_nth_frame: candidates whose tracker score is confident too, grouped by the
// state holding the track.
void VideoControlPlane::plan_reconditioning(FrameWork& w) const {
  ReconditionPlan& plan = w.recondition;
  const int every = cfg_.recondition_every_nth_frame;
  plan.active = every > 0 && w.frame_index % every == 0 && !w.assoc.recondition_candidates.empty();
  if (!plan.active) return;
  for (const auto& [track_id, det] : w.assoc.recondition_candidates)
    if (sigmoidf(w.trk.score_logits[size_t(w.trk.row_of(track_id))]) > cfg_.high_conf_thresh)
      plan.valid.emplace_back(track_id, det);
  for (const auto& [track_id, det] : plan.valid) {
    for (size_t si = 0; si < states_.size(); ++si) {
      const auto& ids = states_[si].obj_ids;
      if (std::find(ids.begin(), ids.end(), track_id) == ids.end()) continue;
      auto group = std::find_if(plan.groups.begin(), plan.groups.end(), [&](const auto& g) { return g.state == si; });
      if (group == plan.groups.end()) {
        plan.groups.push_back({si, {}, {}});
        group = std::prev(plan.groups.end());
      }
      group->obj_ids.push_back(track_id);
      group->det_rows.push_back(det);
      break;
    }
  }
}

// The reconditioned tracks take the detector's mask where the two disagree; the detector masks go to
// the tracker as mask inputs.
void VideoControlPlane::apply_reconditioning(FrameWork& w) {
  if (!w.recondition.active) return;
  MaskStack& masks = w.trk.masks;
  for (const auto& [track_id, det] : w.recondition.valid) {
    float* old_mask = masks.mask(w.trk.row_of(track_id));
    const float* new_mask = w.det.masks.mask(det);
    for (size_t k = 0; k < masks.plane(); ++k)
      if ((new_mask[k] > 0.f) != (old_mask[k] > 0.f)) old_mask[k] = new_mask[k];
  }
  fill_holes_in_mask_scores(masks, cfg_.fill_hole_area);
  std::set<int64_t> reconditioned;
  for (const auto& group : w.recondition.groups) {
    TrackerState& s = states_[group.state];
    Tensor inputs = mask_inputs(w.det.masks.select(group.det_rows), geo_.input_mask_size);
    const bool conditioning = s.note_mask_inputs(w.frame_index, group.obj_ids);
    model_.add_masks(view(s), w.frame_index, group.obj_ids, inputs, MaskInputKind::Recondition, conditioning);
    reconditioned.insert(s.obj_ids.begin(), s.obj_ids.end());
  }
  w.record.reconditioned_obj_ids.assign(reconditioned.begin(), reconditioned.end());
}

// Of two overlapping tracks, the one occluded more recently is hidden from memory encoding.
void VideoControlPlane::suppress_recent_occlusions(FrameWork& w) {
  if (w.trk.count() == 0 || !(cfg_.suppress_overlapping_based_on_recent_occlusion_threshold > 0.f)) return;
  std::vector<int64_t> last = meta_.last_occluded;
  for (int j = 0; j < w.trk.count(); ++j)
    if (w.hot.remove[size_t(j)]) last[size_t(j)] = kAlwaysOccluded;
  std::vector<bool> suppress = choose_occlusion_suppression(w.trk.masks, last, w.reverse, cfg_);
  for (int j = 0; j < w.trk.count(); ++j) {
    if (!w.assoc.trk_nonempty[size_t(j)] || suppress[size_t(j)]) last[size_t(j)] = w.frame_index;
    if (suppress[size_t(j)]) {
      w.record.occlusion_suppressed_obj_ids.push_back(w.trk.ids[size_t(j)]);
      float* p = w.trk.masks.mask(j);
      std::fill(p, p + w.trk.masks.plane(), -10.f);
    }
  }
  meta_.last_occluded = last;
}

// Memory of every state on this frame, from the track masks after area-shrinkage suppression.
void VideoControlPlane::apply_memory_encoding(FrameWork& w) {
  if (w.trk.count() == 0) return;
  w.record.memory_update_low_res_masks = w.trk.masks;
  MaskStack hi = suppress_area_shrinkage(resize_bilinear(w.trk.masks, geo_.input_mask_size, geo_.input_mask_size));
  std::vector<float> presence(static_cast<size_t>(hi.count));
  for (int j = 0; j < hi.count; ++j) {
    const float* p = hi.mask(j);
    presence[size_t(j)] = std::any_of(p, p + hi.plane(), [](float v) { return v > 0.f; }) ? 10.f : -10.f;
  }
  for (auto& s : states_) {
    if (s.obj_ids.empty()) continue;
    std::vector<int> rows;
    for (int64_t id : s.obj_ids) rows.push_back(w.trk.row_of(id));
    MemoryFrame& mf = s.memory[w.frame_index];
    mf.frame_index = w.frame_index;
    std::vector<float> logits = pick(presence, rows);
    model_.encode_memory(view(s), w.frame_index, hi.select(rows).to_tensor(),
                         Tensor::from_vector<float>({int64_t(logits.size())}, logits));
  }
}

void VideoControlPlane::plan_object_changes(FrameWork& w) const {
  const int64_t max_id = shared_max_id_ ? std::max(max_obj_id_, *shared_max_id_) : max_obj_id_;
  w.changes = decide_object_changes(w.det, w.trk, w.assoc, w.hot, obj_ids_, max_id, cfg_);
  w.record.new_det_fa_inds = w.changes.new_dets;
  w.record.new_det_obj_ids = w.changes.new_ids;
  w.record.num_obj_dropped_due_to_limit = w.changes.dropped;
  w.record.obj_ids_newly_removed = w.changes.removed;
}

// Scores, the largest id, masklet confirmation and the position-indexed metadata after the frame.
void VideoControlPlane::update_object_metadata(FrameWork& w) {
  const ObjectChanges& c = w.changes;
  for (size_t k = 0; k < c.new_ids.size(); ++k) {
    const float score = w.det.scores[size_t(c.new_dets[k])];
    obj_id_to_score_[c.new_ids[k]] = score;
    w.sam2_scores[c.new_ids[k]] = score;
  }
  if (!c.new_ids.empty()) max_obj_id_ = std::max(max_obj_id_, c.new_ids.back());
  if (shared_max_id_) *shared_max_id_ = std::max(*shared_max_id_, max_obj_id_);
  for (int64_t id : c.removed) {
    obj_id_to_score_[id] = kRemovedScore;
    w.sam2_scores[id] = kRemovedScore;
  }
  // Tracker probabilities of all previously tracked objects (the removed ones included) overwrite
  // the frame's scores, as the official code does after building the outputs.
  for (int j = 0; j < w.trk.count(); ++j) w.sam2_scores[w.trk.ids[size_t(j)]] = sigmoidf(w.trk.score_logits[size_t(j)]);
  update_confirmation(meta_, obj_ids_, c.ids_after, matched_object_ids(w.det, w.trk, w.assoc, c.new_ids), cfg_);
  meta_ = compact_metadata(meta_, w.hot.remove, c.new_ids.size(), w.frame_index, cfg_);
}

void VideoControlPlane::apply_object_changes(FrameWork& w) {
  const ObjectChanges& c = w.changes;
  if (!c.new_ids.empty()) add_new_objects(w.frame_index, c.new_ids, w.det.masks.select(c.new_dets));
  if (!c.removed.empty()) remove_from_states(c.removed);
  obj_ids_ = c.ids_after;
}

// Masks at video resolution (before post-processing): the tracks, then the new objects' detections.
VideoControlPlane::PendingFrame VideoControlPlane::build_outputs(const FrameWork& w) const {
  const int H = frames_.height(), W = frames_.width();
  std::vector<float> plane(size_t(H) * size_t(W));
  auto to_video = [&](const float* logits, int h, int wd) {
    resize_bilinear(logits, h, wd, plane.data(), H, W);
    return rle_encode(binarize(plane.data(), H, W));
  };
  PendingFrame p;
  p.frame_index = w.frame_index;
  const MaskStack& trk = w.trk.masks;
  for (int j = 0; j < trk.count; ++j) p.masks[w.trk.ids[size_t(j)]] = to_video(trk.mask(j), trk.height, trk.width);
  if (!w.changes.new_ids.empty()) {
    MaskStack nm = w.det.masks.select(w.changes.new_dets);
    fill_holes_in_mask_scores(nm, cfg_.fill_hole_area);
    for (size_t k = 0; k < w.changes.new_ids.size(); ++k)
      p.masks[w.changes.new_ids[k]] = to_video(nm.mask(int(k)), nm.height, nm.width);
  }
  for (auto& [id, m] : p.masks) p.obj_ids.push_back(id);
  p.scores = obj_id_to_score_;
  p.sam2_scores = w.sam2_scores;
  if (cfg_.hide_keep_alive_suppressed_objects) p.suppressed = w.record.keep_alive_suppressed_obj_ids;
  p.stats = {int(w.changes.ids_after.size()), w.changes.dropped};
  return p;
}

void VideoControlPlane::record_frame(FrameWork& w, const PendingFrame& pending) {
  FrameDecisions& d = w.record;
  d.obj_ids_after = w.changes.ids_after;
  d.obj_id_to_score = obj_id_to_score_;
  d.masklet_confirmation_status = meta_.confirmation_status;
  d.stats = pending.stats;
  d.max_obj_id = max_obj_id_;
  for (auto& s : states_) d.tracker_states.push_back({s.obj_ids, s.buckets.slots()});
  d.build_outputs_obj_ids = pending.obj_ids;
  d.build_outputs_masks = pending.masks;
  d.metadata_after = meta_;
  if (!keep_decisions_) decisions_.clear();  // the propagation reads only the latest frame's
  decisions_.push_back(std::move(d));
}

}  // namespace segmux::pipeline
