// VideoControlPlane::add_mask_prompt: a user's mask for one object (segmux extension; official
// add_sam2_new_points with the tracker's add_new_masks in place of add_new_points -> preflight memory).
#include <algorithm>

#include "core/error.h"
#include "pipeline/predictor/control_plane.h"
#include "pipeline/predictor/control_plane_frame.h"

namespace segmux::pipeline {

VideoControlPlane::PointResult VideoControlPlane::add_mask_prompt(int frame_index, int64_t obj_id,
                                                                  const Tensor& input_mask,
                                                                  const BinaryMask& video_mask) {
  SEGMUX_CHECK(video_mask.height == frames_.height() && video_mask.width == frames_.width(), "add_prompt: the mask is ",
               video_mask.width, "x", video_mask.height, ", the video ", frames_.width(), "x", frames_.height());
  // The official add_sam2_new_points first moves an object that shares its tracker state with others
  // into a singleton state without spatial memories (_extract_object_to_singleton_state); the tracker's
  // add_new_masks then fails there (maskmem_pos_enc is None). Refused before anything changes.
  for (const auto& s : states_)
    if (s.obj_ids.size() > 1 && !user_objects_.count(obj_id) &&
        std::find(s.obj_ids.begin(), s.obj_ids.end(), obj_id) != s.obj_ids.end())
      fail("add_prompt: object ", obj_id,
           " shares its tracker state with other objects found with it; the official "
           "tracker cannot take a mask for it (add_new_masks fails after moving it to a state of its own): refine "
           "it with points, or remove it and give the mask to a new object id");
  if (has_object(obj_id)) check_mask_for_existing_object(frame_index, obj_id);
  PointResult r;
  TrackerState& state = user_prompt_state(frame_index, obj_id, r);
  // add_new_masks replaces the object's points on the frame with the mask, which is the frame's input
  // for the object; no relayout of refined objects (unlike add_new_points).
  points_.erase({obj_id, frame_index});
  user_masks_.insert({obj_id, frame_index});
  bool conditioning = false;
  if (r.new_object) {
    // A new tracker state: the frame is one of its conditioning frames.
    conditioning = state.note_mask_inputs(frame_index, {obj_id});
  } else {
    // add_new_masks_to_existing_state: the object is appended to the multiplex state again. The frame
    // is a conditioning frame (its outputs and memory re-made) only if the state holds one there and no
    // propagation has run on it (official is_init_cond_frame; add_all_frames_to_correct_as_cond is
    // false in SAM 3.1). Its input is noted after the model call: the session reads the frame's earlier
    // conditioning objects from it.
    state.buckets.add_objects(1, false);
    state.extra_slots.push_back(obj_id);
    const auto at = state.memory.find(frame_index);
    conditioning = at != state.memory.end() && at->second.conditioning && !state.propagated_frames.count(frame_index);
  }
  Tensor video(DType::u8, {1, video_mask.height, video_mask.width});
  std::copy(video_mask.pixels.begin(), video_mask.pixels.end(), video.data<uint8_t>());
  model_.add_mask_prompt(view(state), frame_index, obj_id, input_mask, video, conditioning);
  if (!r.new_object) state.note_mask_inputs(frame_index, {obj_id});
  finish_user_prompt(state, frame_index, obj_id, r.prob);
  // Official: the mask at video resolution is the object's output there (as -/+1024 logits).
  r.mask = video_mask;
  return r;
}

// The official add_new_masks appends an existing object to its state's stored output of the frame
// (add_new_masks_to_existing_state): refused before anything changes where that output does not exist
// (official: "No existing output found") or where the state has no free slot (official: a new bucket,
// which segmux does not open for an appended entry).
void VideoControlPlane::check_mask_for_existing_object(int frame_index, int64_t obj_id) const {
  for (const auto& s : states_) {
    if (std::find(s.obj_ids.begin(), s.obj_ids.end(), obj_id) == s.obj_ids.end()) continue;
    SEGMUX_CHECK(s.tracked_frames.count(frame_index), "add_prompt: object ", obj_id, " has no output on frame ",
                 frame_index, " to add a mask to (the official tracker fails there too): propagate to frame ",
                 frame_index, " first");
    // Officially the appended entry must complete the frame's stored output: an output made before an
    // earlier mask for the object appended an entry (and not made again by a propagation since) fails
    // the memory encoder's mux (AssertionError in add_new_masks' preflight).
    const auto at = s.output_entries.find(frame_index);
    SEGMUX_CHECK(at == s.output_entries.end() || at->second == s.num_entries(), "add_prompt: object ", obj_id,
                 "'s output on frame ", frame_index,
                 " dates from before its last mask on another frame (the "
                 "official tracker fails here too): propagate over frame ",
                 frame_index, " first");
    SEGMUX_CHECK(s.buckets.available_slots() > 0, "add_prompt: object ", obj_id,
                 "'s tracker state has no free multiplex slot for another mask of it (", s.extra_slots.size(),
                 " masks given on tracked frames already)");
  }
}

}  // namespace segmux::pipeline
