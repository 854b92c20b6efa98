// `segmux serve`'s "predict_image" request: the SAM-1-style interactive image predictor
// (pipeline/predictor/image_predictor.h) on one image of the allowed folder or an upload.
//   {"type": "predict_image", "resource_path": "photo.jpg", "point_coords": [[x, y], ...],
//    "point_labels": [1, 0, ...], "box": [x0, y0, x1, y1], "mask_input": [[...], ...] (Hm x Hm logits),
//    "multimask_output": true}
// -> {"width", "height", "scores": [...], "masks": [COCO compressed RLE, ...], "best",
//     "low_res_logits": [C x Hm x Hm nested lists] (one of them is a later request's mask_input)}.
// Bad requests: ServiceError 400 naming the problem.
#pragma once
#include <nlohmann/json.hpp>

#include "pipeline/backends/model.h"
#include "service/resources.h"

namespace segmux::service {

// Runs the request on a session of `model` of its own (the caller holds the model's work lock).
nlohmann::json predict_image_request(pipeline::Model& model, const ResourceStore& resources,
                                     const nlohmann::json& request);

}  // namespace segmux::service
