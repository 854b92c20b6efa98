#include "pipeline/predictor/image_predictor.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/predictor/image_processor.h"

namespace segmux::pipeline {

namespace {

std::string str(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", double(v));
  return b;
}

std::string mask_input_error(const Tensor& m, int low_res_size) {
  const int64_t s = low_res_size;
  const bool shape_ok = (m.rank() == 3 && m.dim(0) == 1 && m.dim(1) == s && m.dim(2) == s) ||
                        (m.rank() == 2 && m.dim(0) == s && m.dim(1) == s);
  if (!shape_ok)
    return "mask_input has shape " + shape_str(m.shape()) + "; expected (1, " + std::to_string(s) + ", " +
           std::to_string(s) + ") low-res logits (as a previous prediction returns them)";
  if (m.dtype() != DType::f32) return "mask_input must be float32 logits";
  for (int64_t i = 0; i < m.numel(); ++i)
    if (!std::isfinite(m.data<float>()[i])) return "mask_input holds a non-finite value at index " + std::to_string(i);
  return "";
}

}  // namespace

std::string image_prompt_error(const ImagePrompt& p, int width, int height, int low_res_size) {
  if (p.points.size() != p.labels.size())
    return std::to_string(p.points.size()) + " points but " + std::to_string(p.labels.size()) +
           " labels (one label per point: 1 foreground, 0 background)";
  const float W = float(width), H = float(height);
  for (size_t i = 0; i < p.points.size(); ++i) {
    if (p.labels[i] != 0 && p.labels[i] != 1)
      return "point " + std::to_string(i) + " has label " + std::to_string(p.labels[i]) +
             "; labels are 1 (foreground) or 0 (background)";
    const auto& q = p.points[i];
    if (!(q[0] >= 0.f && q[0] <= W && q[1] >= 0.f && q[1] <= H))
      return "point " + std::to_string(i) + " (" + str(q[0]) + ", " + str(q[1]) + ") is outside the " +
             std::to_string(width) + "x" + std::to_string(height) + " image";
  }
  if (p.box) {
    const auto& b = *p.box;
    if (!(b[0] >= 0.f && b[1] >= 0.f && b[2] <= W && b[3] <= H))
      return "box (" + str(b[0]) + ", " + str(b[1]) + ", " + str(b[2]) + ", " + str(b[3]) + ") is outside the " +
             std::to_string(width) + "x" + std::to_string(height) + " image (x0, y0, x1, y1 in pixels)";
    if (!(b[2] > b[0] && b[3] > b[1]))
      return "box (" + str(b[0]) + ", " + str(b[1]) + ", " + str(b[2]) + ", " + str(b[3]) +
             ") is empty: x1 must exceed x0 and y1 must exceed y0";
  }
  if (p.mask_input.defined())
    if (std::string e = mask_input_error(p.mask_input, low_res_size); !e.empty()) return e;
  if (p.points.empty() && !p.box && !p.mask_input.defined()) return "no prompt: give points, a box or a mask_input";
  return "";
}

ImagePredictor::ImagePredictor(Model& model, ImagePredictorOptions options)
    : session_(model.new_session()), opt_(options) {
  SEGMUX_CHECK(std::isfinite(opt_.mask_threshold), "mask_threshold must be finite");
  SEGMUX_CHECK(opt_.max_hole_area >= 0 && opt_.max_sprinkle_area >= 0, "hole / sprinkle areas must be >= 0");
}

ImagePredictor::~ImagePredictor() { release(); }

void ImagePredictor::release() {
  for (size_t i = 0; i < sizes_.size(); ++i) session_->release_frame(int(i));  // image i is frame i of the session
  sizes_.clear();
}

void ImagePredictor::set_image(const RgbImage& image) { set_images({image}); }

void ImagePredictor::set_images(const std::vector<RgbImage>& images) {
  SEGMUX_CHECK(!images.empty(), "set_images: no image");
  release();
  const int S = session_->geometry().image_size;
  for (size_t i = 0; i < images.size(); ++i) {
    const RgbImage& im = images[i];
    SEGMUX_CHECK(im.width > 0 && im.height > 0, "image ", i, " is empty");
    session_->run_backbone_input(int(i), preprocess_image(im, S), im.width, im.height);
    sizes_.push_back({im.width, im.height});
  }
}

namespace {

// SAM2Transforms.transform_coords(normalize=True): x / W, y / H, then * image_size, in float32.
void add_point(PointInputs& in, float x, float y, int w, int h, int image_size, int64_t label) {
  in.xy.push_back(x / float(w) * float(image_size));
  in.xy.push_back(y / float(h) * float(image_size));
  in.labels.push_back(label);
}

PointInputs prompt_points(const ImagePrompt& p, int w, int h, int image_size) {
  PointInputs in;
  if (p.box) {  // the box's corners come first, labelled 2 and 3
    add_point(in, (*p.box)[0], (*p.box)[1], w, h, image_size, 2);
    add_point(in, (*p.box)[2], (*p.box)[3], w, h, image_size, 3);
  }
  for (size_t i = 0; i < p.points.size(); ++i)
    add_point(in, p.points[i][0], p.points[i][1], w, h, image_size, p.labels[i]);
  return in;
}

}  // namespace

ImagePrediction ImagePredictor::predict(const ImagePrompt& prompt, int image_index) {
  SEGMUX_CHECK(!sizes_.empty(), "predict: no image (set_image first)");
  SEGMUX_CHECK(image_index >= 0 && image_index < int(sizes_.size()), "predict: image ", image_index, " of ",
               sizes_.size());
  const auto [w, h] = sizes_[size_t(image_index)];
  const ModelGeometry geo = session_->geometry();
  const int hm = geo.low_res_mask_size;
  if (std::string e = image_prompt_error(prompt, w, h, hm); !e.empty()) fail(e);
  const ImagePromptOutput out =
      session_->predict_image_prompt(image_index, prompt_points(prompt, w, h, geo.image_size),
                                     prompt.mask_input.defined() ? prompt.mask_input.reshaped({1, hm, hm}) : Tensor());
  const int T = int(out.iou.numel());
  std::vector<int> tokens;
  if (prompt.multimask_output)
    for (int t = 1; t < T; ++t) tokens.push_back(t);
  else
    tokens.push_back(out.single_mask_token);

  ImagePrediction r;
  r.width = w;
  r.height = h;
  const int C = int(tokens.size());
  const size_t plane = size_t(hm) * size_t(hm), full = size_t(w) * size_t(h);
  MaskStack low(C, hm, hm);
  r.low_res_logits = Tensor(DType::f32, {C, hm, hm});
  for (int c = 0; c < C; ++c) {
    r.scores.push_back(out.iou.data<float>()[tokens[size_t(c)]]);
    const float* src = out.masks.data<float>() + size_t(tokens[size_t(c)]) * plane;
    std::copy(src, src + plane, low.mask(c));
    float* clamped = r.low_res_logits.data<float>() + size_t(c) * plane;
    for (size_t k = 0; k < plane; ++k) clamped[k] = std::clamp(src[k], -32.0f, 32.0f);
  }
  fill_small_regions(low, opt_.mask_threshold, opt_.max_hole_area, opt_.max_sprinkle_area);
  if (prompt.return_logits) r.logits = Tensor(DType::f32, {C, h, w});
  std::vector<float> up(full);
  for (int c = 0; c < C; ++c) {
    float* dst = prompt.return_logits ? r.logits.data<float>() + size_t(c) * full : up.data();
    resize_bilinear(low.mask(c), hm, hm, dst, h, w);
    if (prompt.return_logits) continue;
    BinaryMask m;
    m.width = w;
    m.height = h;
    m.pixels.resize(full);
    for (size_t k = 0; k < full; ++k) m.pixels[k] = dst[k] > opt_.mask_threshold;
    r.masks.push_back(std::move(m));
  }
  return r;
}

}  // namespace segmux::pipeline
