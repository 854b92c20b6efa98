// Overlay boxes from the visible mask, FreeType labels (with the bitmap fallback) and the colour mask
// PNGs, decoded back with libpng.
#include <gtest/gtest.h>
#include <png.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "pipeline/outputs/label_font.h"
#include "pipeline/outputs/outputs.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

RgbImage black(int w, int h) {
  RgbImage f;
  f.width = w;
  f.height = h;
  f.pixels.assign(size_t(w) * size_t(h) * 3, 0);
  return f;
}

Rgb at(const RgbImage& img, int x, int y) {
  const uint8_t* p = pixel_at(img, x, y);
  return {p[0], p[1], p[2]};
}

// Two blobs whose bounding box corners (top-right, bottom-left) are not mask pixels; the official box
// (before non-overlap) is the whole frame.
FrameOutput two_blobs(int64_t id) {
  FrameOutput out;
  BinaryMask m(150, 200);
  for (int y = 60; y < 70; ++y)
    for (int x = 50; x < 60; ++x) m.at(y, x) = 1;
  for (int y = 80; y < 90; ++y)
    for (int x = 90; x < 100; ++x) m.at(y, x) = 1;
  out.obj_ids = {id};
  out.probs = {0.9f};
  out.boxes_xywh = {{0, 0, 1, 1}};
  out.masks = {m};
  return out;
}

struct Png {
  int width = 0, height = 0, color_type = -1, bit_depth = 0;
  std::vector<uint8_t> indices;  // palette images
  std::vector<png_color> palette;
};

Png read_png(const std::string& path) {
  Png r;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    ADD_FAILURE() << "cannot open " << path;
    return r;
  }
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    std::fclose(f);
    ADD_FAILURE() << "libpng failed on " << path;
    return Png{};
  }
  png_init_io(png, f);
  png_read_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  r.width = int(png_get_image_width(png, info));
  r.height = int(png_get_image_height(png, info));
  r.color_type = png_get_color_type(png, info);
  r.bit_depth = png_get_bit_depth(png, info);
  if (r.color_type == PNG_COLOR_TYPE_PALETTE && r.bit_depth == 8) {
    png_colorp plte = nullptr;
    int n = 0;
    png_get_PLTE(png, info, &plte, &n);
    r.palette.assign(plte, plte + n);
    png_bytepp rows = png_get_rows(png, info);
    for (int y = 0; y < r.height; ++y) r.indices.insert(r.indices.end(), rows[y], rows[y] + r.width);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  std::fclose(f);
  return r;
}

}  // namespace

TEST(Overlay, BoxIsTheVisibleMasksBoundingBoxNotTheOfficialOne) {
  const FrameOutput out = two_blobs(4);
  EXPECT_EQ(visible_box(out.masks[0]), (std::array<int, 4>{50, 60, 99, 89}));
  EXPECT_EQ(visible_box(BinaryMask(3, 3))[2], -1);  // empty: no box
  const RgbImage img = draw_overlay(black(200, 150), out);
  const Rgb c = id_color(4);
  EXPECT_EQ(at(img, 99, 60), c) << "top-right corner of the visible box (not a mask pixel)";
  EXPECT_EQ(at(img, 50, 89), c) << "bottom-left corner";
  EXPECT_EQ(at(img, 99, 75), c) << "right edge";
  EXPECT_EQ(at(img, 75, 75), (Rgb{0, 0, 0})) << "inside the box, outside the mask";
  EXPECT_EQ(at(img, 0, 140), (Rgb{0, 0, 0})) << "the official box's edge is not drawn";
  EXPECT_EQ(at(img, 199, 0), (Rgb{0, 0, 0}));
  EXPECT_EQ(at(img, 101, 75), (Rgb{0, 0, 0})) << "nothing right of the visible box";
  // The label sits on the box's top edge, above it: some pixels there have the label's colour.
  int label = 0;
  for (int y = 40; y < 60; ++y)
    for (int x = 50; x < 80; ++x) label += at(img, x, y) == c;
  EXPECT_GT(label, 20);
}

TEST(Overlay, LabelsUseATrueTypeFontWhenOneIsInstalled) {
  const std::string file = LabelFont::find_font_file();
  ASSERT_FALSE(file.empty()) << "no font found: scripts/setup.sh installs fonts-dejavu-core";
  EXPECT_TRUE(LabelFont::shared().is_truetype());
  LabelFont ttf(file), bitmap("");
  EXPECT_TRUE(ttf.is_truetype());
  EXPECT_FALSE(bitmap.is_truetype());
  RgbImage a = black(120, 60), b = black(120, 60);
  ttf.draw_label(a, 10, 50, "42", 30, {255, 255, 255}, {0, 0, 255});
  bitmap.draw_label(b, 10, 50, "42", 30, {255, 255, 255}, {0, 0, 255});
  // Anti-aliased glyph edges give grey levels between the text and box colours; the bitmap font none.
  auto blends = [](const RgbImage& img) {
    int n = 0;
    for (size_t i = 0; i < img.pixels.size(); i += 3) {
      const uint8_t r = img.pixels[i], bl = img.pixels[i + 2];
      n += bl == 255 && r > 0 && r < 255;
    }
    return n;
  };
  EXPECT_GT(blends(a), 10);
  EXPECT_EQ(blends(b), 0);
  EXPECT_NE(a.pixels, b.pixels);
  // Labels near the border are moved inside the image, never out of it.
  RgbImage c = black(40, 20);
  ttf.draw_label(c, 35, 2, "12345", 16, {255, 255, 255}, {255, 0, 0});
  EXPECT_EQ(at(c, 39, 0)[0], 255);
  EXPECT_THROW(LabelFont("/nonexistent/font.ttf"), Error);
  const std::string junk = ::testing::TempDir() + "/junk.ttf";
  std::ofstream(junk) << "not a font";
  EXPECT_THROW(LabelFont{junk}, Error);
}

TEST(Overlay, ColorMaskPngIsIndexedWithTheOverlayColours) {
  const std::string dir = ::testing::TempDir() + "/color_masks";
  fs::remove_all(dir);
  OutputOptions opt;
  opt.color_masks = true;
  opt.write_json = false;
  FrameOutput out = two_blobs(300);  // ids above 255 keep their own colours
  BinaryMask second(150, 200);
  second.at(0, 0) = 1;
  out.obj_ids.push_back(7);
  out.probs.push_back(0.5f);
  out.boxes_xywh.push_back({0, 0, 0, 0});
  out.masks.push_back(second);
  {
    TrackWriter w(dir, 200, 150, opt);
    out.frame_index = 3;
    w.add(black(200, 150), out);
    w.finish();
  }
  EXPECT_TRUE(fs::exists(dir + "/masks/00003.png")) << "the id PNGs stay";
  const Png png = read_png(dir + "/masks_color/00003.png");
  ASSERT_EQ(png.color_type, PNG_COLOR_TYPE_PALETTE);
  ASSERT_EQ(png.width, 200);
  ASSERT_EQ(png.height, 150);
  ASSERT_EQ(png.palette.size(), 3u);
  auto colour = [&](int x, int y) {
    const png_color& p = png.palette.at(png.indices[size_t(y) * 200 + size_t(x)]);
    return Rgb{p.red, p.green, p.blue};
  };
  EXPECT_EQ(colour(120, 120), (Rgb{0, 0, 0}));
  EXPECT_EQ(colour(55, 65), id_color(300));
  EXPECT_EQ(colour(95, 85), id_color(300));
  EXPECT_EQ(colour(0, 0), id_color(7));
  EXPECT_NE(id_color(7), id_color(300));
}
