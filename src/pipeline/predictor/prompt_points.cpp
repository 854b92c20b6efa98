#include "pipeline/predictor/prompt_points.h"

#include <cmath>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

bool in_unit(float v) { return std::isfinite(v) && v >= 0.f && v <= 1.f; }

}  // namespace

bool is_tracker_prompt(const Prompt& p) { return !p.points_xy.empty() || p.object_box.has_value(); }

PointInputs tracker_point_inputs(const Prompt& p, int image_size) {
  SEGMUX_CHECK(p.obj_id.has_value(), "add_prompt: point prompts need an obj_id (the object they create or refine)");
  SEGMUX_CHECK(*p.obj_id >= 0, "add_prompt: obj_id ", *p.obj_id, " must be >= 0");
  SEGMUX_CHECK(!p.text, "add_prompt: a prompt has either text or points for one object, not both");
  // Officially boxes always go to the detector, and points exclude them (add_prompt asserts it).
  SEGMUX_CHECK(p.boxes_xywh.empty(),
               "add_prompt: points exclude 'bounding_boxes' (boxes are the detector's "
               "exemplars; a tracker box for one object is the extension Prompt::object_box)");
  SEGMUX_CHECK(!p.points_xy.empty() || p.object_box, "add_prompt: obj_id ", *p.obj_id, " is given without points");
  SEGMUX_CHECK(p.point_labels.size() == p.points_xy.size(), "add_prompt: ", p.points_xy.size(), " points but ",
               p.point_labels.size(), " point labels");
  const float s = float(image_size);
  PointInputs in;
  if (p.object_box) {
    const auto& b = *p.object_box;
    SEGMUX_CHECK(in_unit(b[0]) && in_unit(b[1]) && std::isfinite(b[2]) && std::isfinite(b[3]) && b[2] > 0.f &&
                     b[3] > 0.f && b[0] + b[2] <= 1.f + 1e-6f && b[1] + b[3] <= 1.f + 1e-6f,
                 "add_prompt: box (", b[0], ", ", b[1], ", ", b[2], ", ", b[3],
                 ") is empty or outside the frame (normalised x, y, w, h)");
    in.xy.insert(in.xy.end(), {b[0] * s, b[1] * s, (b[0] + b[2]) * s, (b[1] + b[3]) * s});
    in.labels.insert(in.labels.end(), {2, 3});
  }
  for (size_t i = 0; i < p.points_xy.size(); ++i) {
    const auto& q = p.points_xy[i];
    SEGMUX_CHECK(in_unit(q[0]) && in_unit(q[1]), "add_prompt: point ", i, " (", q[0], ", ", q[1],
                 ") is outside the frame (normalised x, y in [0, 1])");
    const int label = p.point_labels[i];
    SEGMUX_CHECK(label == 0 || label == 1 || label == 2 || label == 3, "add_prompt: point ", i, " has label ", label,
                 " (1 positive, 0 negative; 2 / 3 box corners)");
    in.xy.insert(in.xy.end(), {q[0] * s, q[1] * s});
    in.labels.push_back(label);
  }
  return in;
}

}  // namespace segmux::pipeline
