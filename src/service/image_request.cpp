#include "service/image_request.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/tracks_json.h"
#include "pipeline/predictor/image_predictor.h"

namespace segmux::service {

namespace {

using nlohmann::json;
using namespace segmux::pipeline;

[[noreturn]] void bad(const std::string& message) { throw ServiceError(400, "predict_image: " + message); }

float number(const json& v, const std::string& what) {
  if (!v.is_number()) bad(what + " must be a number");
  return v.get<float>();
}

ImagePrompt prompt_of(const json& r, int low_res) {
  static const std::set<std::string> known = {"type", "resource_path", "point_coords",     "point_labels",
                                              "box",  "mask_input",    "multimask_output", "session_id"};
  for (const auto& [k, v] : r.items())
    if (!known.count(k)) bad("unknown field '" + k + "'");
  ImagePrompt p;
  if (r.contains("point_coords") && !r["point_coords"].is_null()) {
    if (!r["point_coords"].is_array()) bad("point_coords must be a list of [x, y]");
    for (const auto& q : r["point_coords"]) {
      if (!q.is_array() || q.size() != 2) bad("each point must be [x, y] in pixels");
      p.points.push_back({number(q[0], "a point coordinate"), number(q[1], "a point coordinate")});
    }
    if (!r.contains("point_labels") || !r["point_labels"].is_array())
      bad("point_labels must be supplied with point_coords");
    for (const auto& l : r["point_labels"]) {
      if (!l.is_number_integer()) bad("point_labels must be integers (1 foreground, 0 background)");
      p.labels.push_back(l.get<int>());
    }
  } else if (r.contains("point_labels") && !r["point_labels"].is_null()) {
    bad("point_labels given without point_coords");
  }
  if (r.contains("box") && !r["box"].is_null()) {
    const json& b = r["box"];
    if (!b.is_array() || b.size() != 4) bad("box must be [x0, y0, x1, y1] in pixels");
    p.box = std::array<float, 4>{number(b[0], "box"), number(b[1], "box"), number(b[2], "box"), number(b[3], "box")};
  }
  if (r.contains("mask_input") && !r["mask_input"].is_null()) {
    const json& m = r["mask_input"];
    if (!m.is_array() || int(m.size()) != low_res) bad("mask_input must be " + std::to_string(low_res) + " rows");
    p.mask_input = Tensor(DType::f32, {1, low_res, low_res});
    float* d = p.mask_input.data<float>();
    for (const auto& row : m) {
      if (!row.is_array() || int(row.size()) != low_res)
        bad("mask_input must be " + std::to_string(low_res) + " x " + std::to_string(low_res) + " logits");
      for (const auto& v : row) *d++ = number(v, "a mask_input value");
    }
  }
  if (r.contains("multimask_output")) {
    if (!r["multimask_output"].is_boolean()) bad("multimask_output must be true or false");
    p.multimask_output = r["multimask_output"].get<bool>();
  }
  return p;
}

}  // namespace

json predict_image_request(Model& model, const ResourceStore& resources, const json& r) {
  if (!r.contains("resource_path") || !r["resource_path"].is_string()) bad("no string 'resource_path' (the image)");
  const int low_res = model.geometry().low_res_mask_size;
  ImagePrompt p = prompt_of(r, low_res);
  const std::string path = resources.resolve(r["resource_path"].get<std::string>());
  RgbImage img;
  try {
    img = read_image(path);
  } catch (const Error& e) {
    bad(std::string("cannot read the image: ") + e.what());
  }
  if (std::string e = image_prompt_error(p, img.width, img.height, low_res); !e.empty()) bad(e);
  ImagePredictor pred(model);
  pred.set_image(img);
  const ImagePrediction out = pred.predict(p);
  json masks = json::array(), low = json::array();
  const size_t plane = size_t(low_res) * size_t(low_res);
  for (size_t c = 0; c < out.scores.size(); ++c) {
    masks.push_back(mask_rle_json(out.masks[c], RleForm::compressed));
    json rows = json::array();
    const float* d = out.low_res_logits.data<float>() + c * plane;
    for (int y = 0; y < low_res; ++y)
      rows.push_back(std::vector<float>(d + size_t(y) * size_t(low_res), d + size_t(y + 1) * size_t(low_res)));
    low.push_back(std::move(rows));
  }
  const size_t best = size_t(std::max_element(out.scores.begin(), out.scores.end()) - out.scores.begin());
  return {{"width", out.width},        {"height", out.height}, {"scores", out.scores},
          {"masks", std::move(masks)}, {"best", best},         {"low_res_logits", std::move(low)}};
}

}  // namespace segmux::service
