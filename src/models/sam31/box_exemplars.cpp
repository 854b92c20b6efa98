#include "models/sam31/box_exemplars.h"

#include <cmath>

#include "core/error.h"
#include "models/sam31/tensor_names.h"

namespace segmux::sam31 {

std::map<std::string, Tensor> detector_box_inputs(const ModelConfig& cfg, const std::vector<BoxExemplar>& boxes) {
  const int64_t N = cfg.detector_max_boxes;
  SEGMUX_CHECK(int64_t(boxes.size()) <= N, boxes.size(), " box exemplars given, the detector takes at most ", N,
               " (config detector_max_boxes)");
  Tensor t(DType::f32, {1, N, 4}), labels(DType::i64, {1, N}), padding(DType::boolean, {1, N});
  for (int64_t i = 0; i < N; ++i) padding.data<bool>()[i] = true;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxExemplar& e = boxes[i];
    const bool finite = std::isfinite(e.x) && std::isfinite(e.y) && std::isfinite(e.w) && std::isfinite(e.h);
    SEGMUX_CHECK(finite && e.w > 0 && e.h > 0, "box ", i, " is empty (normalised x ", e.x, " y ", e.y, " w ", e.w,
                 " h ", e.h, ")");
    SEGMUX_CHECK(e.x >= 0 && e.y >= 0 && e.x + e.w <= 1 + 1e-6 && e.y + e.h <= 1 + 1e-6, "box ", i,
                 " is outside the frame (normalised x ", e.x, " y ", e.y, " w ", e.w, " h ", e.h, ")");
    float* d = t.data<float>() + i * 4;
    // box_xywh_to_cxcywh in float32, as the official request tensor.
    const float x = float(e.x), y = float(e.y), w = float(e.w), h = float(e.h);
    d[0] = x + 0.5f * w;
    d[1] = y + 0.5f * h;
    d[2] = w;
    d[3] = h;
    labels.data<int64_t>()[i] = e.positive ? 1 : 0;
    padding.data<bool>()[i] = false;
  }
  namespace det = names::detector;
  return {{det::kBoxes, t}, {det::kBoxLabels, labels}, {det::kBoxPadding, padding}};
}

}  // namespace segmux::sam31
