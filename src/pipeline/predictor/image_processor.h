// Single-image concept segmentation with the official image-processor semantics (Sam3Processor of
// facebookresearch/sam3, sam3_image_processor.py): the image resized to the model size and normalised
// in float32, the detector run once for the text prompt, and every query kept whose score
// sigmoid(pred_logit) * sigmoid(presence_logit) is above the threshold (default 0.5). No NMS, no
// tracking (box exemplars: segment(text, boxes)). Masks are the query's mask logits bilinearly resized to the image
// size (align_corners = False), sigmoid > 0.5; boxes are the detector's boxes in pixels. Objects keep the query order.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "pipeline/backends/model.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

struct ImageObjects {
  int width = 0, height = 0;
  std::vector<int> queries;                         // detector query of each object
  std::vector<float> scores;                        // sigmoid(logit) * sigmoid(presence)
  std::vector<std::array<float, 4>> boxes_xyxy_px;  // detector boxes in pixels
  std::vector<BinaryMask> masks;                    // image resolution; objects may overlap
};

// torchvision v2.Resize of a uint8 image tensor as the official default device does it: antialiased
// bilinear in float32 (torch's _upsample_bilinear2d_aa), rounded back to uint8.
RgbImage resize_antialias_f32(const RgbImage& image, int out_width, int out_height);
// float32 [1, 3, S, S] model input as the image processor makes it: that resize, x / 255, then
// (x - 0.5) / 0.5 in float32 (the video loader instead resizes with Pillow and rounds to float16).
Tensor preprocess_image(const RgbImage& image, int image_size);

// The image-processor selection on a detector output for an image of width x height.
ImageObjects select_image_objects(const DetectorOutput& det, int width, int height, float threshold);

class ImageProcessor {
 public:
  // A session of `model` of its own (the model outlives the processor).
  ImageProcessor(Model& model, float threshold);
  ~ImageProcessor();
  // Runs the backbone on `image` (official set_image); every segment() call until the next
  // set_image() reuses its features.
  void set_image(const RgbImage& image);
  // Encodes `text` (official set_text_prompt) and returns the objects the detector finds for it.
  ImageObjects segment(const std::string& text);
  // With box exemplars (official add_geometric_prompt, each box added in turn): the text and the
  // boxes together. An empty text grounds the boxes alone with the official placeholder text "visual".
  ImageObjects segment(const std::string& text, const std::vector<sam31::BoxExemplar>& boxes);

 private:
  std::unique_ptr<ModelSession> model_;
  float threshold_;
  int width_ = 0, height_ = 0;
};

}  // namespace segmux::pipeline
