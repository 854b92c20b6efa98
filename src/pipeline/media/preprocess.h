// Frame pre-processing exactly as the official video loader does it for image folders:
// torchvision resize of a PIL image (Pillow's two-pass antialiased bilinear in 8-bit fixed point)
// to image_size x image_size, then (x/255 - 0.5)/0.5 computed in float16 (the model reads it back
// as float32).
#pragma once
#include "core/tensor.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

// Pillow-exact Image.resize(..., BILINEAR) of an RGB u8 image (aspect ratio not kept).
RgbImage resize_bilinear_pil(const RgbImage& in, int out_width, int out_height);

// u8 RGB (already at model size) -> f32 [1, 3, H, W] with the official normalisation and f16 rounding.
Tensor normalize_for_model(const RgbImage& resized);

// Both steps.
Tensor preprocess_frame(const RgbImage& frame, int image_size);

}  // namespace segmux::pipeline
