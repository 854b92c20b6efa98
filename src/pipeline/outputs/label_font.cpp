#include "pipeline/outputs/label_font.h"

#include <ft2build.h>
#include FT_FREETYPE_H

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

// 3x5 pixel digits, one row per 3-bit pattern (bit 2 = left column); anything else draws as a gap.
constexpr uint8_t kDigits[10][5] = {{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
                                    {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
                                    {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

void fill_box(RgbImage& img, int x0, int y0, int w, int h, Rgb c) {
  for (int y = std::max(0, y0); y < std::min(img.height, y0 + h); ++y)
    for (int x = std::max(0, x0); x < std::min(img.width, x0 + w); ++x) std::memcpy(pixel_at(img, x, y), c.data(), 3);
}

// Top-left of a w x h box whose bottom-left is wanted at (x, y_bottom), kept inside the image.
std::pair<int, int> place(const RgbImage& img, int x, int y_bottom, int w, int h) {
  return {std::clamp(x, 0, std::max(0, img.width - w)), std::clamp(y_bottom - h, 0, std::max(0, img.height - h))};
}

FT_Face face_of(void* p) { return static_cast<FT_Face>(p); }

}  // namespace

namespace {

std::vector<std::string> font_candidates() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SEGMUX_FONT"); env && *env) candidates.emplace_back(env);
  for (const char* p :
       {"/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSansBold.ttf"})
    candidates.emplace_back(p);
  return candidates;
}

}  // namespace

std::string LabelFont::find_font_file() {
  std::error_code ec;
  for (const auto& c : font_candidates())
    if (std::filesystem::is_regular_file(c, ec)) return c;
  return "";
}

const LabelFont& LabelFont::shared() {
  static const std::unique_ptr<LabelFont> font = [] {
    std::error_code ec;
    for (const auto& c : font_candidates()) {
      if (!std::filesystem::is_regular_file(c, ec)) continue;
      try {
        return std::make_unique<LabelFont>(c);
      } catch (const Error&) {
        // not a font FreeType can load: try the next one
      }
    }
    return std::make_unique<LabelFont>("");  // labels still get drawn, in the bitmap font
  }();
  return *font;
}

LabelFont::LabelFont(const std::string& path) : path_(path) {
  if (path.empty()) return;
  FT_Library lib = nullptr;
  SEGMUX_CHECK(FT_Init_FreeType(&lib) == 0, "FreeType cannot start");
  FT_Face face = nullptr;
  if (FT_New_Face(lib, path.c_str(), 0, &face) != 0 || !FT_IS_SCALABLE(face)) {
    if (face) FT_Done_Face(face);
    FT_Done_FreeType(lib);
    fail("font '", path, "' cannot be loaded by FreeType (a scalable TrueType/OpenType file is needed)");
  }
  library_ = lib;
  face_ = face;
}

LabelFont::~LabelFont() {
  if (face_) FT_Done_Face(face_of(face_));
  if (library_) FT_Done_FreeType(static_cast<FT_Library>(library_));
}

void LabelFont::draw_bitmap(RgbImage& img, int x, int y_bottom, const std::string& text, int pixel_height, Rgb fg,
                            Rgb bg) const {
  const int scale = std::max(1, pixel_height / 7);
  const int w = int(text.size()) * 4 * scale + scale, h = 7 * scale;
  auto [x0, y0] = place(img, x, y_bottom, w, h);
  fill_box(img, x0, y0, w, h, bg);
  for (size_t k = 0; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') continue;
    const uint8_t* glyph = kDigits[text[k] - '0'];
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 3; ++c)
        if (glyph[r] & (4 >> c))
          fill_box(img, x0 + scale + int(k) * 4 * scale + c * scale, y0 + scale + r * scale, scale, scale, fg);
  }
}

void LabelFont::draw_label(RgbImage& img, int x, int y_bottom, const std::string& text, int pixel_height, Rgb fg,
                           Rgb bg) const {
  if (!face_) return draw_bitmap(img, x, y_bottom, text, pixel_height, fg, bg);
  std::lock_guard<std::mutex> lock(mu_);
  FT_Face face = face_of(face_);
  const int pad = std::max(1, pixel_height / 8);
  if (FT_Set_Pixel_Sizes(face, 0, FT_UInt(std::max(4, pixel_height - 2 * pad))) != 0)
    return draw_bitmap(img, x, y_bottom, text, pixel_height, fg, bg);
  const int ascender = int(face->size->metrics.ascender >> 6), descender = int(face->size->metrics.descender >> 6);
  int advance = 0;
  for (char ch : text)
    if (FT_Load_Char(face, FT_ULong(static_cast<unsigned char>(ch)), FT_LOAD_DEFAULT) == 0)
      advance += int(face->glyph->advance.x >> 6);
  const int w = advance + 2 * pad, h = ascender - descender + 2 * pad;
  auto [x0, y0] = place(img, x, y_bottom, w, h);
  fill_box(img, x0, y0, w, h, bg);
  int pen = x0 + pad;
  const int baseline = y0 + pad + ascender;
  for (char ch : text) {
    if (FT_Load_Char(face, FT_ULong(static_cast<unsigned char>(ch)), FT_LOAD_RENDER) != 0) continue;
    const FT_GlyphSlot g = face->glyph;
    const FT_Bitmap& bm = g->bitmap;
    if (bm.pixel_mode == FT_PIXEL_MODE_GRAY) {
      for (int r = 0; r < int(bm.rows); ++r)
        for (int c = 0; c < int(bm.width); ++c) {
          const int px = pen + g->bitmap_left + c, py = baseline - g->bitmap_top + r;
          if (px < 0 || py < 0 || px >= img.width || py >= img.height) continue;
          const int a = bm.buffer[r * bm.pitch + c];  // coverage: blend the text colour over the box
          uint8_t* p = pixel_at(img, px, py);
          for (int k = 0; k < 3; ++k) p[k] = uint8_t((fg[size_t(k)] * a + p[k] * (255 - a) + 127) / 255);
        }
    }
    pen += int(g->advance.x >> 6);
  }
}

}  // namespace segmux::pipeline
