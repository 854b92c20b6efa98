#include "models/sam31/box_exemplars.h"

#include <cmath>

#include "core/error.h"
#include "models/sam31/tensor_names.h"

namespace segmux::sam31 {

BoxExemplar box_exemplar_from_xywh(double x, double y, double w, double h, bool positive) {
  const float xf = float(x), yf = float(y), wf = float(w), hf = float(h);
  return {double(xf + 0.5f * wf), double(yf + 0.5f * hf), double(wf), double(hf), positive};
}

std::map<std::string, Tensor> detector_box_inputs(const ModelConfig& cfg, const std::vector<BoxExemplar>& boxes) {
  const int64_t N = cfg.detector_max_boxes;
  SEGMUX_CHECK(int64_t(boxes.size()) <= N, boxes.size(), " box exemplars given, the detector takes at most ", N,
               " (config detector_max_boxes)");
  Tensor t(DType::f32, {1, N, 4}), labels(DType::i64, {1, N}), padding(DType::boolean, {1, N});
  for (int64_t i = 0; i < N; ++i) padding.data<bool>()[i] = true;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxExemplar& e = boxes[i];
    const bool finite = std::isfinite(e.cx) && std::isfinite(e.cy) && std::isfinite(e.w) && std::isfinite(e.h);
    SEGMUX_CHECK(finite && e.w > 0 && e.h > 0, "box ", i, " is empty (normalised cx ", e.cx, " cy ", e.cy, " w ", e.w,
                 " h ", e.h, ")");
    constexpr double kSlack = 1e-6;  // float rounding of a box that touches the frame's edge
    SEGMUX_CHECK(e.cx - e.w / 2 >= -kSlack && e.cy - e.h / 2 >= -kSlack && e.cx + e.w / 2 <= 1 + kSlack &&
                     e.cy + e.h / 2 <= 1 + kSlack,
                 "box ", i, " is outside the frame (normalised cx ", e.cx, " cy ", e.cy, " w ", e.w, " h ", e.h, ")");
    float* d = t.data<float>() + i * 4;
    d[0] = float(e.cx);
    d[1] = float(e.cy);
    d[2] = float(e.w);
    d[3] = float(e.h);
    labels.data<int64_t>()[i] = e.positive ? 1 : 0;
    padding.data<bool>()[i] = false;
  }
  namespace det = names::detector;
  return {{det::kBoxes, t}, {det::kBoxLabels, labels}, {det::kBoxPadding, padding}};
}

}  // namespace segmux::sam31
