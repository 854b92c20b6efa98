// Rotation metadata on input (frames decoded upright), timestamps, and GIFs through libavfilter's
// palette generation.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "common/rotated_video.h"
#include "core/error.h"
#include "pipeline/media/rotation.h"
#include "pipeline/media/video_io.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

// Grey frame with a red block at the top-left corner and a green one at the bottom-left, so every
// quarter turn is told apart.
RgbImage marked(int w, int h) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.assign(size_t(w) * size_t(h) * 3, 128);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = pixel_at(img, x, y);
      if (x < w / 4 && y < h / 4) p[0] = 255, p[1] = 0, p[2] = 0;
      if (x < w / 4 && y >= h - h / 4) p[0] = 0, p[1] = 255, p[2] = 0;
    }
  return img;
}

// The dominant colour (r, g or b) near a point, averaged over a small square.
char colour_near(const RgbImage& img, int cx, int cy) {
  int s[3] = {0, 0, 0};
  for (int y = cy - 2; y <= cy + 2; ++y)
    for (int x = cx - 2; x <= cx + 2; ++x)
      for (int k = 0; k < 3; ++k) s[k] += pixel_at(img, x, y)[k];
  if (s[0] > 2 * s[1] && s[0] > 2 * s[2]) return 'r';
  if (s[1] > 2 * s[0] && s[1] > 2 * s[2]) return 'g';
  return '.';
}

}  // namespace

TEST(Rotation, MatrixAndTagGiveTheClockwiseTurn) {
  int32_t m[9];
  for (int cw : {0, 90, 180, 270}) {
    av_display_rotation_set(m, double(cw));  // a clockwise turn (libavutil/display.h)
    EXPECT_EQ(upright_rotation(m, nullptr), cw) << cw;
    EXPECT_EQ(upright_rotation(m, "0"), cw) << "the matrix wins over the tag";
  }
  EXPECT_EQ(upright_rotation(nullptr, "90"), 90);
  EXPECT_EQ(upright_rotation(nullptr, "-90"), 270);
  EXPECT_EQ(upright_rotation(nullptr, "450"), 90);
  EXPECT_EQ(upright_rotation(nullptr, "sideways"), 0);
  EXPECT_EQ(upright_rotation(nullptr, nullptr), 0);
  RgbImage img = marked(8, 4);
  EXPECT_EQ(rotate_clockwise(rotate_clockwise(img, 90), 270).pixels, img.pixels);
  EXPECT_EQ(rotate_clockwise(rotate_clockwise(img, 180), 180).pixels, img.pixels);
  EXPECT_THROW(rotate_clockwise(img, 45), Error);
}

TEST(Rotation, RotatedVideosAreDecodedUpright) {
  // Stored 64x48 (sideways); the red block is at the stored top-left, green at the stored bottom-left.
  const std::vector<RgbImage> stored(3, marked(64, 48));
  struct Case {
    int clockwise;
    bool tag;
    int w, h;
    char top_left, top_right, bottom_left, bottom_right;
  };
  // Turning clockwise by 90 moves the top-left corner to the top-right, the bottom-left to the top-left.
  const Case cases[] = {{0, false, 64, 48, 'r', '.', 'g', '.'},
                        {90, false, 48, 64, 'g', 'r', '.', '.'},
                        {180, false, 64, 48, '.', 'g', '.', 'r'},
                        {270, false, 48, 64, '.', '.', 'r', 'g'}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.clockwise) + (c.tag ? " (tag)" : " (matrix)"));
    const std::string path = ::testing::TempDir() + "/rot" + std::to_string(c.clockwise) + (c.tag ? "t" : "m") + ".mp4";
    ASSERT_EQ(segmux::testing::write_rotated_mp4(path, stored, c.clockwise, c.tag), "");
    auto r = open_video(path);
    EXPECT_EQ(r->width(), c.w);
    EXPECT_EQ(r->height(), c.h);
    const RgbImage f = r->frame(1);
    ASSERT_EQ(f.width, c.w);
    ASSERT_EQ(f.height, c.h);
    EXPECT_EQ(colour_near(f, 4, 4), c.top_left);
    EXPECT_EQ(colour_near(f, c.w - 5, 4), c.top_right);
    EXPECT_EQ(colour_near(f, 4, c.h - 5), c.bottom_left);
    EXPECT_EQ(colour_near(f, c.w - 5, c.h - 5), c.bottom_right);
    if (c.clockwise) {
      EXPECT_NE(r->describe().find("turned"), std::string::npos) << r->describe();
    }
  }
}

TEST(Timestamps, VideoGifAndFolderFrameTimes) {
  const std::string mp4 = ::testing::TempDir() + "/times.mp4";
  ASSERT_EQ(segmux::testing::write_rotated_mp4(mp4, std::vector<RgbImage>(5, marked(32, 32)), 0, false, 20), "");
  auto v = open_video(mp4);
  ASSERT_EQ(v->num_frames(), 5);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(v->time_s(i).has_value());
    EXPECT_NEAR(*v->time_s(i), i / 20.0, 1e-9) << i;
  }
  const std::string gif = ::testing::TempDir() + "/times.gif";
  {
    auto w = open_video_writer(gif, 16, 16, 4);  // 25 cs per frame
    for (int i = 0; i < 3; ++i) w->add(marked(16, 16));
    w->finish();
  }
  auto g = open_video(gif);
  EXPECT_DOUBLE_EQ(*g->time_s(0), 0.0);
  EXPECT_DOUBLE_EQ(*g->time_s(2), 0.5);
  const std::string folder = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video/frames";
  EXPECT_FALSE(open_video(folder)->time_s(3).has_value()) << "a folder has no times without a frame rate";
  EXPECT_DOUBLE_EQ(*open_video(folder, 8)->time_s(3), 0.375);
  EXPECT_DOUBLE_EQ(open_video(folder, 8)->fps(), 8.0);
  EXPECT_THROW(open_video(folder, -1), Error);
}

TEST(GifPalette, AGeneratedPaletteBeatsTheFixedColourCube) {
  // A smooth two-colour gradient: a fixed 6x7x6 cube has few colours along it.
  const int w = 96, h = 64;
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = pixel_at(img, x, y);
      p[0] = uint8_t(60 + x * 100 / w);
      p[1] = uint8_t(90 + y * 60 / h);
      p[2] = uint8_t(140 + (x + y) * 40 / (w + h));
    }
  const std::string path = ::testing::TempDir() + "/palette.gif";
  {
    auto wr = open_video_writer(path, w, h, 10);
    for (int t = 0; t < 4; ++t) wr->add(img);
    wr->finish();
  }
  auto r = open_video(path);
  ASSERT_EQ(r->num_frames(), 4);
  const RgbImage back = r->frame(3);
  std::set<uint32_t> colours;
  double err = 0, cube_err = 0;
  std::set<uint32_t> cube_colours;
  for (size_t i = 0; i < img.pixels.size(); i += 3) {
    colours.insert(uint32_t(back.pixels[i]) << 16 | uint32_t(back.pixels[i + 1]) << 8 | back.pixels[i + 2]);
    uint32_t cube = 0;
    const int levels[3] = {6, 7, 6};
    for (int k = 0; k < 3; ++k) {
      const int q = (img.pixels[i + size_t(k)] * (levels[k] - 1) + 127) / 255 * 255 / (levels[k] - 1);
      cube = cube << 8 | uint32_t(q);
      cube_err += std::abs(q - img.pixels[i + size_t(k)]);
      err += std::abs(int(back.pixels[i + size_t(k)]) - int(img.pixels[i + size_t(k)]));
    }
    cube_colours.insert(cube);
  }
  err /= double(img.pixels.size());
  cube_err /= double(img.pixels.size());
  // The old writer's fixed cube: these colours and this error; the generated palette does far better.
  EXPECT_GT(colours.size(), 4 * cube_colours.size()) << colours.size() << " vs " << cube_colours.size();
  EXPECT_LT(err, cube_err / 3) << err << " vs " << cube_err;
  EXPECT_LT(err, 3.0);
}
