#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "pipeline/media/video_io.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

static std::string fixture_video() { return std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video"; }

static RgbImage gradient(int w, int h, int t) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = pixel_at(img, x, y);
      p[0] = uint8_t(x * 255 / w);
      p[1] = uint8_t(y * 255 / h);
      p[2] = uint8_t((t * 40) % 256);
    }
  return img;
}

static double mean_abs_diff(const RgbImage& a, const RgbImage& b) {
  double s = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return s / double(a.pixels.size());
}

TEST(VideoIo, FrameFolderIsReadInNameOrder) {
  auto r = open_video(fixture_video() + "/frames");
  EXPECT_EQ(r->num_frames(), 16);
  EXPECT_EQ(r->width(), 320);
  EXPECT_EQ(r->height(), 240);
  RgbImage f3 = r->frame(3);
  RgbImage again = read_image(fixture_video() + "/frames/00003.png");
  EXPECT_EQ(f3.pixels, again.pixels);
  EXPECT_THROW(r->frame(16), Error);
}

TEST(VideoIo, GifFramesMatchThePngsClosely) {
  auto gif = open_video(fixture_video() + "/video.gif");
  auto png = open_video(fixture_video() + "/frames");
  ASSERT_EQ(gif->num_frames(), png->num_frames());
  // The GIF is palette-quantised: close, not equal. Random access backwards works too.
  for (int i : {0, 5, 15, 2}) EXPECT_LT(mean_abs_diff(gif->frame(i), png->frame(i)), 12.0) << i;
}

TEST(VideoIo, Mp4RoundTripWithRandomAccess) {
  std::string path = ::testing::TempDir() + "/rt.mp4";
  {
    auto w = open_video_writer(path, 64, 48, 10);
    for (int t = 0; t < 12; ++t) w->add(gradient(64, 48, t));
    w->finish();
  }
  auto r = open_video(path);
  ASSERT_EQ(r->num_frames(), 12);
  EXPECT_EQ(r->width(), 64);
  for (int i : {0, 1, 2, 11, 5, 6, 3}) EXPECT_LT(mean_abs_diff(r->frame(i), gradient(64, 48, i)), 8.0) << i;
}

TEST(VideoIo, GifWriterRoundTrip) {
  std::string path = ::testing::TempDir() + "/rt.gif";
  auto w = open_video_writer(path, 31, 17, 5);  // odd sizes
  for (int t = 0; t < 3; ++t) w->add(gradient(31, 17, t));
  w->finish();
  auto r = open_video(path);
  ASSERT_EQ(r->num_frames(), 3);
  EXPECT_LT(mean_abs_diff(r->frame(2), gradient(31, 17, 2)), 30.0);
}

TEST(VideoIo, GrayPngRoundTrip16Bit) {
  std::string path = ::testing::TempDir() + "/ids.png";
  std::vector<uint16_t> v = {0, 1, 300, 65535, 7, 9};
  write_png_gray(path, 3, 2, v, true);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_THROW(write_png_gray(path, 3, 2, v, false), Error);  // 300 needs 16 bits
}

TEST(VideoIo, BadInputsAreClearErrors) {
  EXPECT_THROW(open_video("/nonexistent/video.mp4"), Error);
  std::string junk = ::testing::TempDir() + "/junk.mp4";
  std::ofstream(junk) << "this is not a video";
  EXPECT_THROW(open_video(junk), Error);
  std::string bad_gif = ::testing::TempDir() + "/junk.gif";
  std::ofstream(bad_gif) << "GIF89a garbage";
  EXPECT_THROW(open_video(bad_gif), Error);
  std::string empty_dir = ::testing::TempDir() + "/empty_frames";
  fs::create_directories(empty_dir);
  EXPECT_THROW(open_video(empty_dir), Error);
  // A failed write leaves nothing behind.
  EXPECT_THROW(open_video_writer("/nonexistent-dir/x.gif", 4, 4, 10), Error);
}
