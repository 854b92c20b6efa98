// Box exemplars (the official add_prompt bounding_boxes / bounding_box_labels) as the detector's box
// inputs. Kept apart from the graph builder so that the pipeline's backend boundary can name them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/config.h"

namespace segmux::sam31 {

// One box exemplar in the official request form: normalised x, y (top-left), w, h over the frame.
struct BoxExemplar {
  double x = 0, y = 0, w = 0, h = 0;
  bool positive = true;
};

// The detector's box inputs (boxes, box_labels, box_padding) for a batch of one: the exemplars in the
// first slots (cxcywh), the rest padding. Errors name the box at fault: more than
// cfg.detector_max_boxes, an empty box (w or h <= 0), a box outside [0, 1] (official asserts).
std::map<std::string, Tensor> detector_box_inputs(const ModelConfig& cfg, const std::vector<BoxExemplar>& boxes);

}  // namespace segmux::sam31
