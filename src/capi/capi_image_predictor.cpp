// The C API's interactive image predictor (segmux_image_predictor_*, segmux_prediction_*): the SAM-1-style
// predictor (pipeline/predictor/image_predictor.h) on one image, holding the model while it is open.
#include <cstring>

#include "capi/capi_checks.h"
#include "capi/capi_internal.h"
#include "core/error_kind.h"
#include "pipeline/predictor/image_predictor.h"

using segmux::capi::guard;
using segmux::capi::HandleType;
using segmux::capi::invalid;
namespace pl = segmux::pipeline;

struct segmux_image_predictor {
  explicit segmux_image_predictor(segmux_model* m) : model(m), use(m) {}
  segmux_model* model = nullptr;
  segmux::capi::ImageUse use;  // before the predictor: counted until its features are released
  std::unique_ptr<pl::ImagePredictor> predictor;
  int width = 0, height = 0;
  segmux::capi::LiveHandle<HandleType::image_predictor> registered{this};  // last: registered when built
};

struct segmux_prediction {
  pl::ImagePrediction r;
  std::vector<std::vector<uint8_t>> masks;  // 0 / 1 per pixel
  segmux::capi::LiveHandle<HandleType::prediction> registered{this};
};

namespace {

segmux_status open_with(segmux_model* model, const char* what, segmux_image_predictor** out,
                        const std::function<pl::RgbImage()>& load) {
  if (!out) return invalid(std::string(what) + ": predictor must not be NULL");
  *out = nullptr;
  if (const segmux_status st = segmux::capi::check_handle(model, HandleType::model, what)) return st;
  const pl::RgbImage img = load();
  auto p = std::make_unique<segmux_image_predictor>(model);  // its own model session, beside any video session
  p->predictor = std::make_unique<pl::ImagePredictor>(*model->opened.model);
  p->predictor->set_image(img);
  p->width = img.width;
  p->height = img.height;
  *out = p.release();
  return SEGMUX_OK;
}

pl::ImagePrompt prompt_of(const segmux_predict_prompt& p) {
  using segmux::ErrorKind;
  if (p.struct_size < sizeof(segmux_predict_prompt))
    segmux::fail_as(ErrorKind::InvalidArgument, "predict prompt: struct_size is ", p.struct_size,
                    " (call segmux_predict_prompt_init)");
  if (p.num_points && (!p.points_xy || !p.point_labels))
    segmux::fail_as(ErrorKind::InvalidArgument, "predict prompt: points given without their arrays");
  segmux::capi::check_finite("predict prompt: points_xy", p.points_xy, 2 * p.num_points);
  if (p.box_xyxy) segmux::capi::check_finite("predict prompt: box_xyxy", p.box_xyxy, 4);
  pl::ImagePrompt q;
  for (size_t i = 0; i < p.num_points; ++i) {
    q.points.push_back({p.points_xy[2 * i], p.points_xy[2 * i + 1]});
    q.labels.push_back(p.point_labels[i]);
  }
  if (p.box_xyxy) q.box = std::array<float, 4>{p.box_xyxy[0], p.box_xyxy[1], p.box_xyxy[2], p.box_xyxy[3]};
  if (p.mask_input) {
    if (p.mask_input_size <= 0 || p.mask_input_size > 4096)
      segmux::fail_as(ErrorKind::InvalidArgument, "predict prompt: mask_input_size ", p.mask_input_size,
                      " (the side of the low-res logits)");
    const int64_t s = p.mask_input_size;
    q.mask_input = segmux::Tensor(segmux::DType::f32, {1, s, s});
    std::memcpy(q.mask_input.raw(), p.mask_input, size_t(s * s) * sizeof(float));
  }
  q.multimask_output = p.multimask_output != 0;
  q.return_logits = p.return_logits != 0;
  return q;
}

const segmux_prediction* live(const segmux_prediction* p, size_t i) {
  if (!segmux::capi::is_live(p, HandleType::prediction) || i >= p->r.scores.size()) return nullptr;
  return p;
}

}  // namespace

extern "C" {

void segmux_predict_prompt_init(segmux_predict_prompt* p) {
  if (!p) return;
  std::memset(p, 0, sizeof *p);
  p->struct_size = sizeof *p;
  p->multimask_output = 1;
}

segmux_status segmux_image_predictor_open(segmux_model* model, const uint8_t* rgb, int width, int height, size_t stride,
                                          segmux_image_predictor** predictor) {
  return guard([&] {
    const char* what = "segmux_image_predictor_open";
    return open_with(model, what, predictor,
                     [&] { return segmux::capi::copy_rgb_image(what, rgb, width, height, stride); });
  });
}

segmux_status segmux_image_predictor_open_file(segmux_model* model, const char* path,
                                               segmux_image_predictor** predictor) {
  return guard([&] {
    const char* what = "segmux_image_predictor_open_file";
    if (!path || !*path) return invalid(std::string(what) + ": no path");
    return open_with(model, what, predictor, [&] {
      segmux::capi::check_existing_path(std::string(what) + ": the image", path, segmux::capi::PathKind::file);
      return segmux::capi::reading_existing_file([&] { return pl::read_image(path); });
    });
  });
}

segmux_status segmux_image_predictor_predict(segmux_image_predictor* predictor, const segmux_predict_prompt* prompt,
                                             segmux_prediction** result) {
  return guard([&] {
    const char* what = "segmux_image_predictor_predict";
    if (!result) return invalid(std::string(what) + ": result must not be NULL");
    *result = nullptr;
    if (const segmux_status st = segmux::capi::check_handle(predictor, HandleType::image_predictor, what)) return st;
    if (!prompt) return invalid(std::string(what) + ": prompt is NULL");
    const pl::ImagePrompt q = prompt_of(*prompt);
    const int hm = predictor->model->opened.model->geometry().low_res_mask_size;
    if (std::string e = pl::image_prompt_error(q, predictor->width, predictor->height, hm); !e.empty())
      return invalid(std::string(what) + ": " + e);
    auto out = std::make_unique<segmux_prediction>();
    out->r = predictor->predictor->predict(q);
    for (const auto& m : out->r.masks) out->masks.push_back(m.pixels);
    *result = out.release();
    return SEGMUX_OK;
  });
}

segmux_status segmux_image_predictor_close(segmux_image_predictor* predictor) {
  return guard([&] {
    if (!predictor) return SEGMUX_OK;
    if (const segmux_status st =
            segmux::capi::check_handle(predictor, HandleType::image_predictor, "segmux_image_predictor_close"))
      return st;
    delete predictor;
    return SEGMUX_OK;
  });
}

size_t segmux_prediction_count(const segmux_prediction* p) { return live(p, 0) ? p->r.scores.size() : 0; }
int segmux_prediction_width(const segmux_prediction* p) { return live(p, 0) ? p->r.width : 0; }
int segmux_prediction_height(const segmux_prediction* p) { return live(p, 0) ? p->r.height : 0; }
float segmux_prediction_score(const segmux_prediction* p, size_t i) { return live(p, i) ? p->r.scores[i] : 0.f; }
const uint8_t* segmux_prediction_mask(const segmux_prediction* p, size_t i) {
  return live(p, i) && i < p->masks.size() ? p->masks[i].data() : nullptr;
}
const float* segmux_prediction_logits(const segmux_prediction* p, size_t i) {
  if (!live(p, i) || !p->r.logits.defined()) return nullptr;
  return p->r.logits.data<float>() + i * size_t(p->r.width) * size_t(p->r.height);
}
int segmux_prediction_low_res_size(const segmux_prediction* p) {
  return live(p, 0) ? int(p->r.low_res_logits.dim(1)) : 0;
}
const float* segmux_prediction_low_res(const segmux_prediction* p, size_t i) {
  if (!live(p, i)) return nullptr;
  const size_t s = size_t(p->r.low_res_logits.dim(1));
  return p->r.low_res_logits.data<float>() + i * s * s;
}
void segmux_prediction_free(segmux_prediction* p) {
  if (segmux::capi::is_live(p, HandleType::prediction)) delete p;
}

}  // extern "C"
