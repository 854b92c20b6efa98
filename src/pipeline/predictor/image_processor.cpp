#include "pipeline/predictor/image_processor.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/media/preprocess.h"

namespace segmux::pipeline {

namespace {
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

namespace {

// torch's antialiased bilinear weights of one dimension (_compute_indices_min_size_weights_aa with the
// triangle filter, align_corners=False): per output index, the first input index and its weights.
struct AaWeights {
  std::vector<int> first, count;
  std::vector<std::vector<float>> w;
};

AaWeights aa_weights(int in_size, int out_size) {
  const float scale = float(in_size) / float(out_size);
  const float support = scale >= 1.0f ? scale : 1.0f;
  const float invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  AaWeights a;
  for (int i = 0; i < out_size; ++i) {
    const float center = float(double(scale) * (i + 0.5));
    const int xmin = std::max(int((center - support) + 0.5), 0);
    const int xsize = std::min(int((center + support) + 0.5), in_size) - xmin;
    std::vector<float> w(size_t(std::max(xsize, 0)));
    float total = 0.f;
    for (int j = 0; j < xsize; ++j) {
      // torch passes the filter a float argument, and computes 1 - |x| in double.
      const float x = std::abs(float((j + xmin - center + 0.5) * invscale));
      w[size_t(j)] = float(x < 1.0f ? 1.0 - double(x) : 0.0);
      total += w[size_t(j)];
    }
    if (total != 0.f)
      for (float& v : w) v /= total;
    a.first.push_back(xmin);
    a.count.push_back(xsize);
    a.w.push_back(std::move(w));
  }
  return a;
}

}  // namespace

RgbImage resize_antialias_f32(const RgbImage& in, int out_w, int out_h) {
  SEGMUX_CHECK(in.width > 0 && in.height > 0 && out_w > 0 && out_h > 0, "resize: bad sizes");
  // Width first, then height (torch's separable order on CPU), in float32; rounded half to even.
  const AaWeights wy = aa_weights(in.height, out_h), wx = aa_weights(in.width, out_w);
  std::vector<float> tmp(size_t(in.height) * size_t(out_w) * 3);
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double t = 0.0;  // float products summed in double, as torch does
        for (int j = 0; j < wx.count[size_t(x)]; ++j)
          t += double(float(pixel_at(in, wx.first[size_t(x)] + j, y)[c]) * wx.w[size_t(x)][size_t(j)]);
        tmp[(size_t(y) * size_t(out_w) + size_t(x)) * 3 + size_t(c)] = float(t);
      }
  RgbImage out;
  out.width = out_w;
  out.height = out_h;
  out.pixels.resize(size_t(out_w) * size_t(out_h) * 3);
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double t = 0.0;
        for (int j = 0; j < wy.count[size_t(y)]; ++j)
          t += double(tmp[(size_t(wy.first[size_t(y)] + j) * size_t(out_w) + size_t(x)) * 3 + size_t(c)] *
                      wy.w[size_t(y)][size_t(j)]);
        pixel_at(out, x, y)[c] = uint8_t(std::clamp(std::nearbyint(float(t)), 0.f, 255.f));
      }
  return out;
}

Tensor preprocess_image(const RgbImage& image, int image_size) {
  RgbImage r = resize_antialias_f32(image, image_size, image_size);
  Tensor t(DType::f32, {1, 3, r.height, r.width});
  float* d = t.data<float>();
  const size_t plane = size_t(r.width) * size_t(r.height);
  for (size_t i = 0; i < plane; ++i)
    for (size_t c = 0; c < 3; ++c) d[c * plane + i] = (float(r.pixels[i * 3 + c]) / 255.0f - 0.5f) / 0.5f;
  return t;
}

ImageObjects select_image_objects(const DetectorOutput& det, int width, int height, float threshold) {
  SEGMUX_CHECK(det.presence_logit.defined() && det.presence_logit.numel() == 1,
               "image segmentation needs the detector's presence logit");
  const Tensor& logits = det.pred_logits;
  const int64_t q = logits.numel();
  SEGMUX_CHECK(det.boxes_xyxy.numel() == q * 4 && det.mask_logits.rank() == 3 && det.mask_logits.dim(0) == q,
               "detector output has inconsistent query counts");
  const float presence = sigmoid(det.presence_logit.data<float>()[0]);
  const int mh = int(det.mask_logits.dim(1)), mw = int(det.mask_logits.dim(2));
  ImageObjects out;
  out.width = width;
  out.height = height;
  std::vector<float> plane(size_t(width) * size_t(height));
  for (int64_t k = 0; k < q; ++k) {
    const float score = sigmoid(logits.data<float>()[k]) * presence;
    if (!(score > threshold)) continue;
    const float* b = det.boxes_xyxy.data<float>() + k * 4;
    out.queries.push_back(int(k));
    out.scores.push_back(score);
    out.boxes_xyxy_px.push_back({b[0] * float(width), b[1] * float(height), b[2] * float(width), b[3] * float(height)});
    resize_bilinear(det.mask_logits.data<float>() + k * mh * mw, mh, mw, plane.data(), height, width);
    BinaryMask m;
    m.width = width;
    m.height = height;
    m.pixels.resize(plane.size());
    for (size_t i = 0; i < plane.size(); ++i) m.pixels[i] = sigmoid(plane[i]) > 0.5f;
    out.masks.push_back(std::move(m));
  }
  return out;
}

ImageProcessor::ImageProcessor(Model& model, float threshold) : model_(model.new_session()), threshold_(threshold) {
  SEGMUX_CHECK(threshold >= 0.f && threshold < 1.f, "the score threshold must be in [0, 1), not ", threshold);
}

namespace {
constexpr int kImageFrame = 0;  // the session holds the image's features under this frame index
}  // namespace

ImageProcessor::~ImageProcessor() = default;

void ImageProcessor::set_image(const RgbImage& image) {
  model_->release_frame(kImageFrame);
  model_->run_backbone_input(kImageFrame, preprocess_image(image, model_->geometry().image_size), image.width,
                             image.height);
  width_ = image.width;
  height_ = image.height;
}

ImageObjects ImageProcessor::segment(const std::string& text) {
  SEGMUX_CHECK(!text.empty(), "the prompt is empty");
  return segment(text, {});
}

ImageObjects ImageProcessor::segment(const std::string& text, const std::vector<sam31::BoxExemplar>& boxes) {
  SEGMUX_CHECK(!text.empty() || !boxes.empty(), "segment: neither a text nor a box prompt");
  SEGMUX_CHECK(width_ > 0, "segment: no image (set_image first)");
  // The detector grounds entry 0 of the official text batch; the other two are its placeholders.
  // Boxes alone: the official processor encodes the text "visual" for them.
  const std::vector<std::string> text_batch = {text.empty() ? std::string("visual") : text, "visual", "geometric"};
  return select_image_objects(model_->detect(kImageFrame, text_batch, boxes), width_, height_, threshold_);
}

}  // namespace segmux::pipeline
