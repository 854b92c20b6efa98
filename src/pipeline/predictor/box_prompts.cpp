#include "pipeline/predictor/box_prompts.h"

#include <cmath>

#include "core/error.h"

namespace segmux::pipeline {

std::vector<sam31::BoxExemplar> prompt_box_exemplars(const Prompt& prompt) {
  const auto& boxes = prompt.boxes_xywh;
  SEGMUX_CHECK(prompt.box_labels.size() == boxes.size(), "add_prompt: ", boxes.size(), " boxes but ",
               prompt.box_labels.size(), " box labels");
  std::vector<sam31::BoxExemplar> out;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const auto& b = boxes[i];
    const int label = prompt.box_labels[i];
    SEGMUX_CHECK(label == 0 || label == 1, "add_prompt: box ", i, " has label ", label, " (1 positive, 0 negative)");
    bool finite = true;
    for (float v : b) finite = finite && std::isfinite(v);
    SEGMUX_CHECK(finite && b[2] > 0 && b[3] > 0, "add_prompt: box ", i, " [", b[0], ", ", b[1], ", ", b[2], ", ", b[3],
                 "] is empty (width and height must be > 0)");
    // The official asserts: x, y, w, h in [0, 1], and the box inside the frame.
    SEGMUX_CHECK(b[0] >= 0 && b[1] >= 0 && b[0] + b[2] <= 1.0f + 1e-6f && b[1] + b[3] <= 1.0f + 1e-6f,
                 "add_prompt: box ", i, " [", b[0], ", ", b[1], ", ", b[2], ", ", b[3],
                 "] is not inside the frame (normalised x, y, w, h in [0, 1])");
    out.push_back(sam31::box_exemplar_from_xywh(b[0], b[1], b[2], b[3], label == 1));
  }
  return out;
}

}  // namespace segmux::pipeline
