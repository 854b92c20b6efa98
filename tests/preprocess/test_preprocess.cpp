#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "pipeline/media/preprocess.h"

using namespace segmux;
using namespace segmux::pipeline;

static std::string video_dir() { return std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video"; }

// The official loader's resized frames (torchvision on PIL) must be reproduced bit for bit.
TEST(Preprocess, ResizeMatchesTheOfficialLoaderExactly) {
  for (int i : {0, 7, 15}) {
    char name[32];
    std::snprintf(name, sizeof name, "/%05d.png", i);
    RgbImage frame = read_image(video_dir() + "/frames" + name);
    RgbImage ref = read_image(video_dir() + "/resized" + name);
    RgbImage ours = resize_bilinear_pil(frame, ref.width, ref.height);
    ASSERT_EQ(ours.width, ref.width);
    ASSERT_EQ(ours.height, ref.height);
    size_t diff = 0;
    for (size_t k = 0; k < ours.pixels.size(); ++k) diff += ours.pixels[k] != ref.pixels[k];
    EXPECT_EQ(diff, 0u) << "frame " << i;
  }
}

// The backbone fixture's input image is fp16((x/255-0.5)/0.5) of resized frame 0.
TEST(Preprocess, NormalisedFrameEqualsTheBackboneFixtureInput) {
  TensorFile f = read_safetensors(std::string(SEGMUX_FIXTURES) + "/sam31-tiny/modules/backbone.safetensors");
  const Tensor& ref = f.at("in.image");
  RgbImage frame = read_image(video_dir() + "/frames/00000.png");
  Tensor ours = preprocess_frame(frame, int(ref.dim(2)));
  ASSERT_EQ(ours.shape(), ref.shape());
  EXPECT_TRUE(ours.identical(ref));
}

TEST(Preprocess, UpscaleAndIdentity) {
  RgbImage img;
  img.width = 3;
  img.height = 2;
  img.pixels = {0, 0, 0, 255, 255, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
  RgbImage same = resize_bilinear_pil(img, 3, 2);
  EXPECT_EQ(same.pixels, img.pixels);
  RgbImage up = resize_bilinear_pil(img, 7, 5);
  EXPECT_EQ(up.width, 7);
  EXPECT_EQ(up.height, 5);
  EXPECT_EQ(pixel_at(up, 0, 0)[0], 0);
}
