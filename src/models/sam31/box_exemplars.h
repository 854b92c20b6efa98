// Box exemplars (the official add_prompt bounding_boxes / bounding_box_labels) as the detector's box
// inputs. Kept apart from the graph builder so that the pipeline's backend boundary can name them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/config.h"

namespace segmux::sam31 {

// One box exemplar as the detector takes it: normalised centre x, y and width, height over the frame.
struct BoxExemplar {
  double cx = 0, cy = 0, w = 0, h = 0;
  bool positive = true;
};

// From the official request form (normalised top-left x, y, w, h), converted in float32 as the
// official add_prompt does (box_xywh_to_cxcywh on a float32 tensor).
BoxExemplar box_exemplar_from_xywh(double x, double y, double w, double h, bool positive);

// The detector's box inputs (boxes, box_labels, box_padding) for a batch of one: the exemplars in the
// first slots, the rest padding. Errors name the box at fault: more than cfg.detector_max_boxes, an
// empty box (w or h <= 0), a box outside the frame [0, 1] (the official asserts).
std::map<std::string, Tensor> detector_box_inputs(const ModelConfig& cfg, const std::vector<BoxExemplar>& boxes);

}  // namespace segmux::sam31
