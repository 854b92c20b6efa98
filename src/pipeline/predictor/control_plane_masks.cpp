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
  PointResult r;
  TrackerState& state = user_prompt_state(frame_index, obj_id, r);
  // add_new_masks replaces the object's points on the frame with the mask, which is the frame's input
  // for the object. The frame becomes a conditioning frame only if the state has not tracked it
  // (official is_init_cond_frame; add_all_frames_to_correct_as_cond is false in SAM 3.1); the tracker's
  // add_new_masks has no relayout of refined objects, unlike add_new_points.
  points_.erase({obj_id, frame_index});
  user_masks_.insert({obj_id, frame_index});
  const bool conditioning = state.note_mask_inputs(frame_index, {obj_id});
  Tensor video(DType::u8, {1, video_mask.height, video_mask.width});
  std::copy(video_mask.pixels.begin(), video_mask.pixels.end(), video.data<uint8_t>());
  model_.add_mask_prompt(view(state), frame_index, obj_id, input_mask, video, conditioning);
  finish_user_prompt(state, frame_index, obj_id, r.prob);
  // Official: the mask at video resolution is the object's output there (as -/+1024 logits).
  r.mask = video_mask;
  return r;
}

}  // namespace segmux::pipeline
