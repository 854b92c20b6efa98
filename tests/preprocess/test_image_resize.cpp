// The image processor's pre-processing (torchvision v2.Resize on a uint8 tensor: antialiased bilinear
// in float32, rounded back; then /255 and (x-0.5)/0.5 in float32) against the official image-processor
// fixture (tests/fixtures/sam31-tiny-image, made by the official Sam3Processor).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io/safetensors.h"
#include "pipeline/media/video_io.h"
#include "pipeline/predictor/image_processor.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {
const std::string kImageSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-image";
}

TEST(ImagePreprocess, ResizeAndInputEqualTheOfficialImageProcessor) {
  if (!std::filesystem::exists(kImageSet + "/images/frame00.png")) GTEST_SKIP() << "image fixtures not found";
  for (const char* name : {"frame00", "frame07"}) {
    RgbImage in = read_image(kImageSet + "/images/" + name + ".png");
    RgbImage ref = read_image(kImageSet + "/images/" + name + "_resized.png");
    RgbImage got = resize_antialias_f32(in, ref.width, ref.height);
    ASSERT_EQ(got.pixels.size(), ref.pixels.size());
    // Known residue: torch 1.13's float arithmetic is not reproduced to the last bit; a few values (9 and
    // 4 of 84672 here) round to the neighbouring level.
    size_t diff = 0;
    int worst = 0;
    for (size_t i = 0; i < ref.pixels.size(); ++i) {
      diff += got.pixels[i] != ref.pixels[i];
      worst = std::max(worst, std::abs(int(got.pixels[i]) - int(ref.pixels[i])));
    }
    EXPECT_LE(diff, ref.pixels.size() / 5000)
        << name << ": " << diff << " of " << ref.pixels.size() << " values differ";
    EXPECT_LE(worst, 1) << name;
  }
  // The exact model input of frame00 (modules/backbone.safetensors in.image).
  auto st = read_safetensors(kImageSet + "/modules/backbone.safetensors");
  const Tensor& image = st.at("in.image");
  Tensor got = preprocess_image(read_image(kImageSet + "/images/frame00.png"), int(image.dim(3)));
  ASSERT_EQ(got.numel(), image.numel());
  float worst = 0.f;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(got.data<float>()[i] - image.data<float>()[i]));
  EXPECT_LE(worst, 2.f / 255.f + 1e-6f);  // one level of the resized uint8 image, normalised
}
