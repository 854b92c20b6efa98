// Box exemplars of an add_prompt request (official bounding_boxes: normalised top-left x, y, w, h;
// bounding_box_labels: 1 positive, 0 negative), checked and converted for the detector.
#pragma once
#include <string>
#include <vector>

#include "models/sam31/box_exemplars.h"
#include "pipeline/predictor/session_api.h"

namespace segmux::pipeline {

// The official video path's text for a prompt of boxes alone: find_text_batch[0] stays
// "<text placeholder>" and the detector grounds it with the boxes.
inline constexpr const char* kBoxOnlyText = "<text placeholder>";

// The prompt's boxes as exemplars (official box_xywh_to_cxcywh in float32). Errors start with
// "add_prompt: " and name the box: labels not matching the boxes, a label other than 0/1, an empty
// box, a box not inside the frame.
std::vector<sam31::BoxExemplar> prompt_box_exemplars(const Prompt& prompt);

}  // namespace segmux::pipeline
