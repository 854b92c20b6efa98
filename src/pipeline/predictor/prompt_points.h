// Point prompts (and the extension's object box) of the session API to the tracker's model-input pixels (official
// add_prompt with points: relative coordinates * image_size; a box is two points labelled 2 / 3, placed before the
// clicks as the SAM predictors do), with the checks that make bad prompts clear errors.
#pragma once
#include "pipeline/backends/model.h"
#include "pipeline/predictor/session_api.h"

namespace segmux::pipeline {

// Whether `p` goes to the tracker (points, or the extension's object_box, for one object) rather than to
// the detector (text and / or boxes; obj_id then unused, as officially).
bool is_tracker_prompt(const Prompt& p);
// The prompt's points (box corners first) in model-input pixels; error naming the bad point / box.
PointInputs tracker_point_inputs(const Prompt& p, int image_size);

}  // namespace segmux::pipeline
