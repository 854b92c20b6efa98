#include "pipeline/media/label_png.h"

#include <png.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

namespace {

struct PngReadError {
  char message[256] = {};
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* err = static_cast<PngReadError*>(png_get_error_ptr(png));
  std::snprintf(err->message, sizeof err->message, "%s", msg ? msg : "unknown error");
  png_longjmp(png, 1);
}
void on_png_warning(png_structp, png_const_charp) {}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

LabelImage read_label_png(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  SEGMUX_CHECK(file != nullptr, "cannot open label image '", path, "': ", std::strerror(errno));
  unsigned char sig[8] = {};
  SEGMUX_CHECK(std::fread(sig, 1, 8, file.get()) == 8 && png_sig_cmp(sig, 0, 8) == 0, "label image '", path,
               "' is not a PNG");
  // Everything with a destructor lives before setjmp: a longjmp must not skip one.
  LabelImage img;
  std::vector<png_bytep> rows;
  std::vector<uint8_t> raw;
  std::string refused;
  PngReadError err;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    fail("label image '", path, "' cannot be read: ", err.message[0] ? err.message : "out of memory");
  }
  png_init_io(png, file.get());
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (color != PNG_COLOR_TYPE_PALETTE && color != PNG_COLOR_TYPE_GRAY)
    refused = "is a colour or alpha PNG, not a label image (palette or grayscale PNG whose values are object ids)";
  else if (w == 0 || h == 0 || int64_t(w) * int64_t(h) > kMaxFramePixels)
    refused = "declares " + std::to_string(w) + "x" + std::to_string(h) + " pixels (at most " +
              std::to_string(kMaxFramePixels >> 20) + " Mpixel)";
  if (!refused.empty()) {
    png_destroy_read_struct(&png, &info, nullptr);
    fail("label image '", path, "' ", refused);
  }
  if (depth < 8) png_set_packing(png);  // one byte per pixel, the values unscaled
  if (depth == 16) png_set_swap(png);   // little-endian u16 rows
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t bytes_per = depth == 16 ? 2 : 1;
  raw.resize(size_t(w) * size_t(h) * bytes_per);
  rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = &raw[size_t(y) * size_t(w) * bytes_per];
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  img.width = int(w);
  img.height = int(h);
  img.values.resize(size_t(w) * size_t(h));
  for (size_t i = 0; i < img.values.size(); ++i)
    img.values[i] = bytes_per == 2 ? uint16_t(raw[2 * i] | raw[2 * i + 1] << 8) : raw[i];
  return img;
}

}  // namespace segmux::pipeline
