// Mask prompts (segmux extension Prompt::mask, request field "object_mask"): one object's binary mask
// on one frame, for the tracker. The official SAM 3.1 request API has no mask field; a mask prompt is
// its add_prompt with points for one object (add_sam2_new_points: a new object or a refinement) with
// the tracker's add_new_masks in place of add_new_points (tools/fixtures/gen_mask_prompts.py,
// docs/predictor.md "Mask prompts"). The mask may have any size: add_new_masks resizes it with torch's
// antialiased bilinear interpolation to the tracker's mask-input size (values kept in [0, 1]) and to the
// video size (then > 0.5); a mask already at one of those sizes is taken as it is there.
#pragma once
#include "core/tensor.h"
#include "pipeline/masks/rle.h"
#include "pipeline/predictor/session_api.h"

namespace segmux::pipeline {

// A checked mask prompt at the two sizes the tracker reads.
struct MaskInputs {
  Tensor input_mask;      // f32 [1, Hi, Wi] in [0, 1] at input_mask_size (the mask-as-output input)
  BinaryMask video_mask;  // the mask at the video size (the object's output there, and its memory's)
};

// Whether `p` is a mask prompt.
bool is_mask_prompt(const Prompt& p);
// The prompt's mask at input_mask_size and at the video size; errors start with "add_prompt: " and name
// the problem (no obj_id, other prompt kinds with it, an empty or non-binary mask, a mask of 0 pixels).
MaskInputs tracker_mask_inputs(const Prompt& p, int video_height, int video_width, int input_mask_size);

// torch F.interpolate(mode="bilinear", antialias=True, align_corners=False) of one f32 plane.
std::vector<float> resize_antialias_plane(const std::vector<float>& plane, int height, int width, int out_height,
                                          int out_width);

}  // namespace segmux::pipeline
