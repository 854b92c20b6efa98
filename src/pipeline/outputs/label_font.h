// Overlay label text: a TrueType font rendered through FreeType (anti-aliased) when a font file is
// found, else the built-in 3x5 bitmap digits, so that overlays never depend on installed fonts.
// Font search, the first that FreeType loads wins: $SEGMUX_FONT, then Debian's DejaVu Sans Bold
// (fonts-dejavu-core), DejaVu Sans, Liberation Sans Bold, FreeSans Bold.
#pragma once
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

using Rgb = std::array<uint8_t, 3>;

class LabelFont {
 public:
  // path "" = the built-in bitmap font; a file FreeType cannot load -> segmux::Error naming it.
  explicit LabelFont(const std::string& path);
  ~LabelFont();
  LabelFont(const LabelFont&) = delete;
  LabelFont& operator=(const LabelFont&) = delete;

  // The process-wide font the overlays use (searched once, see above; bitmap when none is found).
  static const LabelFont& shared();
  static std::string find_font_file();  // the first candidate that exists; "" when none does

  bool is_truetype() const { return face_ != nullptr; }
  const std::string& path() const { return path_; }

  // Draws `text` in `fg` on a filled `bg` box of about `pixel_height` pixels high whose bottom-left
  // corner is at (x, y_bottom), moved inside the image when it would leave it. Thread-safe.
  void draw_label(RgbImage& img, int x, int y_bottom, const std::string& text, int pixel_height, Rgb fg, Rgb bg) const;

 private:
  void draw_bitmap(RgbImage& img, int x, int y_bottom, const std::string& text, int pixel_height, Rgb fg, Rgb bg) const;
  std::string path_;
  void* library_ = nullptr;  // FT_Library
  void* face_ = nullptr;     // FT_Face
  mutable std::mutex mu_;    // FreeType faces are not thread-safe
};

}  // namespace segmux::pipeline
