// The C API's image segmentation (segmux_model_segment_image / _file): the official image processor
// (pipeline/predictor/image_processor.h) on one image, every text in turn with the box exemplars, as
// `segmux segment` runs it.
#include <cstring>

#include "capi/capi_checks.h"
#include "capi/capi_internal.h"
#include "core/error_kind.h"
#include "pipeline/predictor/image_processor.h"

using segmux::capi::guard;
using segmux::capi::invalid;
namespace pl = segmux::pipeline;

namespace segmux::capi {

ImageUse::ImageUse(segmux_model* model) : model_(model) {
  std::lock_guard<std::mutex> lock(model_->mu);
  ++model_->image_uses;
}

ImageUse::~ImageUse() {
  std::lock_guard<std::mutex> lock(model_->mu);
  --model_->image_uses;
}

pipeline::RgbImage copy_rgb_image(const std::string& what, const uint8_t* rgb, int width, int height, size_t stride) {
  if (!rgb) fail_as(ErrorKind::InvalidArgument, what, ": rgb is NULL");
  if (width <= 0 || height <= 0 || int64_t(width) * height > pipeline::kMaxFramePixels)
    fail_as(ErrorKind::InvalidArgument, what, ": an image of ", width, "x", height, " (at most ",
            pipeline::kMaxFramePixels, " pixels)");
  const size_t row = size_t(width) * 3;
  if (stride != 0 && stride < row)
    fail_as(ErrorKind::InvalidArgument, what, ": a row stride of ", stride, " bytes is shorter than a row (", row, ")");
  pipeline::RgbImage img;
  img.width = width;
  img.height = height;
  img.pixels.resize(row * size_t(height));
  for (int y = 0; y < height; ++y)
    std::memcpy(img.pixels.data() + row * size_t(y), rgb + (stride ? stride : row) * size_t(y), row);
  return img;
}

}  // namespace segmux::capi

namespace {

void check_image_prompt(const segmux_image_prompt& p) {
  using segmux::ErrorKind;
  if (p.struct_size < sizeof(segmux_image_prompt))
    segmux::fail_as(ErrorKind::InvalidArgument, "image prompt: struct_size is ", p.struct_size,
                    " (call segmux_image_prompt_init)");
  if ((p.num_texts && !p.texts) || (p.num_boxes && (!p.boxes_xywh || !p.box_labels)))
    segmux::fail_as(ErrorKind::InvalidArgument, "image prompt: texts or boxes given without their arrays");
  if (p.num_texts == 0 && p.num_boxes == 0)
    segmux::fail_as(ErrorKind::InvalidArgument, "image prompt: no text and no box (nothing to find)");
  for (size_t i = 0; i < p.num_texts; ++i) {
    const std::string what = "image prompt: texts[" + std::to_string(i) + "]";
    if (!p.texts[i] || !*p.texts[i]) segmux::fail_as(ErrorKind::InvalidArgument, what, " is NULL or empty");
    segmux::capi::check_text(what, p.texts[i]);
  }
  segmux::capi::check_finite("image prompt: boxes_xywh", p.boxes_xywh, 4 * p.num_boxes);
  segmux::capi::check_labels("image prompt: box_labels", p.box_labels, p.num_boxes);
  for (size_t i = 0; i < p.num_boxes; ++i)
    if (!(p.boxes_xywh[4 * i + 2] > 0 && p.boxes_xywh[4 * i + 3] > 0))
      segmux::fail_as(ErrorKind::InvalidArgument, "image prompt: box ", i, " is empty (width and height must be > 0)");
  if (!(p.threshold >= 0.f && p.threshold < 1.f))
    segmux::fail_as(ErrorKind::InvalidArgument, "image prompt: threshold ", p.threshold, " is not in [0, 1)");
}

// Every text with the boxes (boxes alone: the official text "visual"); ids 0.. in that order.
std::unique_ptr<segmux_frame> segment(pl::Model& model, const pl::RgbImage& img, const segmux_image_prompt& p) {
  pl::ImageProcessor proc(model, p.threshold);
  proc.set_image(img);
  std::vector<segmux::sam31::BoxExemplar> boxes;  // normalised cxcywh in double, as the official gets them
  for (size_t i = 0; i < p.num_boxes; ++i) {
    const float* b = p.boxes_xywh + 4 * i;
    boxes.push_back({double(b[0]) + double(b[2]) / 2, double(b[1]) + double(b[3]) / 2, double(b[2]), double(b[3]),
                     p.box_labels[i] == 1});
  }
  std::vector<std::string> texts(p.texts, p.texts + p.num_texts);
  if (texts.empty()) texts.push_back("");
  pl::FrameOutput out;
  const float W = float(img.width), H = float(img.height);
  for (const std::string& text : texts) {
    pl::ImageObjects o = proc.segment(text, boxes);
    for (size_t k = 0; k < o.scores.size(); ++k) {
      const auto& b = o.boxes_xyxy_px[k];
      out.obj_ids.push_back(int64_t(out.obj_ids.size()));
      out.probs.push_back(o.scores[k]);
      out.boxes_xywh.push_back({b[0] / W, b[1] / H, (b[2] - b[0]) / W, (b[3] - b[1]) / H});
      out.masks.push_back(std::move(o.masks[k]));
      out.prompts.push_back(text.empty() ? "visual" : text);
    }
  }
  return segmux::capi::make_frame(out, img.width, img.height);
}

segmux_status segment_with(segmux_model* model, const char* what, const segmux_image_prompt* p, segmux_frame** result,
                           const std::function<pl::RgbImage()>& load) {
  if (!result) return invalid(std::string(what) + ": result must not be NULL");
  *result = nullptr;
  if (const segmux_status st = segmux::capi::check_handle(model, segmux::capi::HandleType::model, what)) return st;
  if (!p) return invalid(std::string(what) + ": prompt is NULL");
  check_image_prompt(*p);
  const pl::RgbImage img = load();
  const segmux::capi::ImageUse use(model);  // on a model session of its own, beside any video session
  *result = segment(*model->opened.model, img, *p).release();
  return SEGMUX_OK;
}

}  // namespace

extern "C" {

void segmux_image_prompt_init(segmux_image_prompt* p) {
  if (!p) return;
  std::memset(p, 0, sizeof *p);
  p->struct_size = sizeof *p;
  p->threshold = 0.5f;
}

segmux_status segmux_model_segment_image(segmux_model* model, const uint8_t* rgb, int width, int height, size_t stride,
                                         const segmux_image_prompt* prompt, segmux_frame** result) {
  return guard([&] {
    const char* what = "segmux_model_segment_image";
    return segment_with(model, what, prompt, result,
                        [&] { return segmux::capi::copy_rgb_image(what, rgb, width, height, stride); });
  });
}

segmux_status segmux_model_segment_file(segmux_model* model, const char* path, const segmux_image_prompt* prompt,
                                        segmux_frame** result) {
  return guard([&] {
    const char* what = "segmux_model_segment_file";
    if (!path || !*path) return invalid(std::string(what) + ": no path");
    return segment_with(model, what, prompt, result, [&] {
      segmux::capi::check_existing_path(std::string(what) + ": the image", path, segmux::capi::PathKind::file);
      return segmux::capi::reading_existing_file([&] { return pl::read_image(path); });
    });
  });
}

}  // extern "C"
