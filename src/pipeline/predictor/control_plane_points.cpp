// VideoControlPlane::add_point_prompt: point / box prompts for one object (official
// add_tracker_new_points -> tracker add_new_points with the interactive head -> preflight memory).
#include <algorithm>

#include "core/error.h"
#include "pipeline/predictor/control_plane.h"
#include "pipeline/predictor/control_plane_frame.h"

namespace segmux::pipeline {

bool VideoControlPlane::has_object(int64_t obj_id) const {
  return std::find(obj_ids_.begin(), obj_ids_.end(), obj_id) != obj_ids_.end();
}

// A new object from points: its own tracker state, its place in the (ascending) object list and the
// position-indexed hot-start / confirmation metadata.
void VideoControlPlane::insert_point_object(int frame_index, int64_t obj_id) {
  const size_t pos = size_t(std::lower_bound(obj_ids_.begin(), obj_ids_.end(), obj_id) - obj_ids_.begin());
  const size_t n = obj_ids_.size();
  auto insert_at = [pos](auto& v, auto value) {
    if (pos <= v.size()) v.insert(v.begin() + long(pos), value);
  };
  // Metadata vectors follow the object list once a frame has run; before that they are empty.
  if (meta_.obj_first_frame.size() == n) {
    insert_at(meta_.obj_first_frame, int64_t(frame_index));
    insert_at(meta_.consecutive_unmatch_count, int64_t(0));
    insert_at(meta_.trk_keep_alive, int64_t(cfg_.init_trk_keep_alive));
    insert_at(meta_.last_occluded, kNeverOccluded);
    std::vector<int64_t> pairs((n + 1) * (n + 1), 0);
    if (meta_.overlap_pair_counts.size() == n * n)
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
          pairs[(i + (i >= pos)) * (n + 1) + (j + (j >= pos))] = meta_.overlap_pair_counts[i * n + j];
    meta_.overlap_pair_counts = std::move(pairs);
  }
  // Official: status 1 with consecutive_det_num at the threshold, so the next frame confirms it.
  if (meta_.confirmation_status.size() == n) {
    insert_at(meta_.confirmation_status, kUnconfirmed);
    insert_at(meta_.consecutive_det_num, int64_t(cfg_.masklet_confirmation_consecutive_det_thresh));
  }
  obj_ids_.insert(obj_ids_.begin() + long(pos), obj_id);
  max_obj_id_ = std::max(max_obj_id_, obj_id);
  if (shared_max_id_) *shared_max_id_ = std::max(*shared_max_id_, max_obj_id_);
  TrackerState s;
  s.id = model_.new_state_id();
  s.obj_ids = {obj_id};
  s.buckets = MultiplexBuckets(1, cfg_.bucket_capacity, cfg_.multiplex_count);
  states_.push_back(std::move(s));
}

// Official add_sam2_new_points up to the tracker call, shared by point and mask prompts: the object is
// new (its own state) or refined; the first refinement of an object that shares its tracker state
// moves it into a new singleton state (memories dropped, see ModelSession::extract_object), which has
// tracked nothing yet, so the prompt is a fresh conditioning input there.
VideoControlPlane::TrackerState& VideoControlPlane::user_prompt_state(int frame_index, int64_t obj_id, PointResult& r) {
  SEGMUX_CHECK(frame_index >= 0 && frame_index < frames_.num_frames(), "add_prompt: frame ", frame_index,
               " is out of range for a video of ", frames_.num_frames(), " frames");
  SEGMUX_CHECK(obj_id >= 0, "add_prompt: obj_id ", obj_id, " must be >= 0");
  r.new_object = !has_object(obj_id);
  SEGMUX_CHECK(r.new_object || prompted_frames_.count(frame_index), "add_prompt: object ", obj_id,
               " cannot be refined on frame ", frame_index,
               " before a prompt or a propagation has produced outputs there (propagate first)");
  ensure_frame_features(frame_index);
  if (r.new_object) insert_point_object(frame_index, obj_id);
  TrackerState* state = nullptr;
  for (auto& s : states_)
    if (std::find(s.obj_ids.begin(), s.obj_ids.end(), obj_id) != s.obj_ids.end()) state = &s;
  SEGMUX_CHECK(state != nullptr, "add_prompt: object ", obj_id, " has no tracker state");
  if (!r.new_object && state->obj_ids.size() > 1 && !user_objects_.count(obj_id))
    state = &extract_to_singleton(*state, obj_id);
  return *state;
}

// After the tracker call: the prompted frame is a conditioning frame of the object's state holding the
// object's input; detector inputs of the state are cleared (official add_sam2_new_points).
void VideoControlPlane::finish_user_prompt(TrackerState& state, int frame_index, int64_t obj_id, float prob) {
  clear_detector_inputs(state);
  state.tracked_frames.insert(frame_index);
  state.output_entries[frame_index] = state.num_entries();
  prompted_frames_.insert(frame_index);
  user_objects_.insert(obj_id);
  obj_id_to_score_[obj_id] = prob;
}

VideoControlPlane::PointResult VideoControlPlane::add_point_prompt(int frame_index, int64_t obj_id,
                                                                   const PointInputs& points, bool clear_old_points) {
  SEGMUX_CHECK(!points.labels.empty() && points.xy.size() == 2 * points.labels.size(),
               "add_prompt: a point prompt needs one label per point");
  // The official refinement on a tracked frame extracts the object into a singleton state, which fails
  // for an object a mask appended to its state again ("object IDs must be unique"; tools/fixtures
  // sam31-tiny-masks-existing "official_failures"). Refused before anything changes.
  for (const auto& s : states_)
    SEGMUX_CHECK(s.extra_slots.empty() || !s.tracked_frames.count(frame_index) ||
                     std::find(s.obj_ids.begin(), s.obj_ids.end(), obj_id) == s.obj_ids.end(),
                 "add_prompt: object ", obj_id,
                 " was given masks on tracked frames; the official tracker cannot refine "
                 "it with points on tracked frame ",
                 frame_index,
                 " (its refinement fails on the object's repeated "
                 "multiplex entries): give it a mask instead");
  PointResult r;
  TrackerState* state = &user_prompt_state(frame_index, obj_id, r);

  // The object's points on this frame: replaced, or appended to (clear_old_points=false).
  PointInputs& all = points_[{obj_id, frame_index}];
  if (clear_old_points) all = PointInputs{};
  all.xy.insert(all.xy.end(), points.xy.begin(), points.xy.end());
  all.labels.insert(all.labels.end(), points.labels.begin(), points.labels.end());

  // Official tracker add_new_points on a frame the object's state has tracked (a refinement): the
  // object is extracted into a singleton state and merged back. When it is the state's only object the
  // merge re-creates the state with a fresh layout (the memory quirk is the model session's).
  if (!r.new_object && state->obj_ids.size() == 1 && state->tracked_frames.count(frame_index)) {
    const TrackerStateView before = view(*state);
    state->output_entries.clear();
    state->buckets = MultiplexBuckets(1, cfg_.bucket_capacity, cfg_.multiplex_count);
    model_.relayout_refined_object(before, view(*state), obj_id);
  }
  // The clicked frame is a conditioning frame of the object's state from now on.
  state->note_mask_inputs(frame_index, {obj_id});
  state->memory[frame_index].conditioning = true;
  TrackerOutput out = model_.add_points(view(*state), frame_index, obj_id, all, true);
  finish_user_prompt(*state, frame_index, obj_id, r.prob);

  MaskStack m = MaskStack::from_tensor(out.low_res_masks, "point prompt mask");
  SEGMUX_CHECK(m.count == 1, "add_points returned ", m.count, " masks for one object");
  const int H = frames_.height(), W = frames_.width();
  std::vector<float> plane(size_t(H) * size_t(W));
  resize_bilinear(m.mask(0), m.height, m.width, plane.data(), H, W);
  r.mask = binarize(plane.data(), H, W);
  return r;
}

// The new state holds the object alone, with the source's frames (same kinds, the object's own inputs)
// and nothing tracked; the source loses the object as in a removal. Appended last, as officially.
VideoControlPlane::TrackerState& VideoControlPlane::extract_to_singleton(TrackerState& source, int64_t obj_id) {
  TrackerState s;
  s.id = model_.new_state_id();
  s.obj_ids = {obj_id};
  s.buckets = MultiplexBuckets(1, cfg_.bucket_capacity, cfg_.multiplex_count);
  for (const auto& [f, m] : source.memory) {
    MemoryFrame mf{f, m.conditioning, {}};
    if (std::find(m.input_obj_ids.begin(), m.input_obj_ids.end(), obj_id) != m.input_obj_ids.end())
      mf.input_obj_ids = {obj_id};
    s.memory[f] = mf;
  }
  model_.extract_object(view(source), view(s), obj_id);
  remove_from_states({obj_id});  // invalidates `source`
  states_.push_back(std::move(s));
  return states_.back();
}

// Official add_sam2_new_points before its preflight: mask inputs without points of the same object on
// that frame (the detector's; a user's mask prompt counts as a user input, as points do) are cleared in the clicked
// object's state, so those frames are no longer stored-output frames: the next propagation re-runs the tracker there
// (the conditioning memory stays).
void VideoControlPlane::clear_detector_inputs(TrackerState& state) {
  for (auto& [f, m] : state.memory)
    std::erase_if(m.input_obj_ids, [&, f = f](int64_t id) {
      return !points_.count({id, f}) && !user_masks_.count({id, f});
    });
}

std::map<int64_t, VideoControlPlane::TrackedObject> VideoControlPlane::track_objects(int frame_index, bool reverse,
                                                                                     const std::set<int64_t>& ids) {
  ensure_frame_features(frame_index);
  // The selected states' objects and output rows, concatenated in state order. Official
  // (_propogate_tracker_one_frame_local_gpu): an object's row is its position in the concatenated
  // object list, so a state holding appended entries (extra_slots) shifts the rows of the states after it.
  std::vector<int64_t> listed;
  MaskStack rows(0, geo_.low_res_mask_size, geo_.low_res_mask_size);
  std::vector<float> scores;
  for (auto& s : states_) {
    if (std::none_of(s.obj_ids.begin(), s.obj_ids.end(), [&](int64_t id) { return ids.count(id) > 0; })) continue;
    TrackerStateView v = view(s);
    v.tracker_only = true;
    const auto at = s.memory.find(frame_index);
    const bool stored = at != s.memory.end() && !at->second.input_obj_ids.empty();
    TrackerOutput t = model_.propagate(v, frame_index, reverse);
    MaskStack low = MaskStack::from_tensor(t.low_res_masks, "tracker low-res masks");
    std::vector<float> sc = tensor_to_floats(t.object_score_logits, "tracker object scores");
    SEGMUX_CHECK(low.count == int(v.obj_ids.size()) && sc.size() == v.obj_ids.size(), "tracker state ", s.id,
                 " returned ", low.count, " masks for ", v.obj_ids.size(), " entries");
    fill_holes_in_mask_scores(low, cfg_.fill_hole_area);
    // Memory of the frame (official track_step with run_mem_encoder=True): the decoder's masks at the
    // image size with their own object scores. Frames holding inputs keep their stored outputs and
    // memory (official: consolidated frames are not re-run).
    if (!stored) {
      s.output_entries[frame_index] = s.num_entries();
      MemoryFrame& mf = s.memory[frame_index];
      mf.frame_index = frame_index;
      v = view(s);
      v.tracker_only = true;
      model_.encode_memory(v, frame_index, resize_bilinear(low, geo_.image_size, geo_.image_size).to_tensor(),
                           t.object_score_logits);
    }
    s.tracked_frames.insert(frame_index);
    s.propagated_frames.insert(frame_index);
    listed.insert(listed.end(), s.obj_ids.begin(), s.obj_ids.end());
    rows.append(low);
    scores.insert(scores.end(), sc.begin(), sc.end());
  }
  std::map<int64_t, TrackedObject> out;
  const int H = frames_.height(), W = frames_.width();
  std::vector<float> plane(size_t(H) * size_t(W));
  for (size_t j = 0; j < listed.size(); ++j) {
    if (!ids.count(listed[j]) || out.count(listed[j])) continue;
    resize_bilinear(rows.mask(int(j)), rows.height, rows.width, plane.data(), H, W);
    out[listed[j]] = {binarize(plane.data(), H, W), scores[j]};
  }
  prompted_frames_.insert(frame_index);
  return out;
}

}  // namespace segmux::pipeline
