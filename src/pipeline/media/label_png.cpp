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

// The libpng part: only trivially destructible locals live in this frame, since libpng's errors longjmp
// back into it (GCC's -Wclobbered flags any std::string here under -O1).
enum class PngDecode { ok, failed, not_label, too_large };

struct DecodedPng {
  png_uint_32 width = 0, height = 0;
  size_t bytes_per_value = 1;
  std::vector<uint8_t> raw;
  std::vector<png_bytep> rows;
};

PngDecode decode_label_png(FILE* file, DecodedPng* out, PngReadError* err) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, err, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return PngDecode::failed;
  }
  png_init_io(png, file);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  out->width = w;
  out->height = h;
  PngDecode refused = PngDecode::ok;
  if (color != PNG_COLOR_TYPE_PALETTE && color != PNG_COLOR_TYPE_GRAY)
    refused = PngDecode::not_label;
  else if (w == 0 || h == 0 || int64_t(w) * int64_t(h) > kMaxFramePixels)
    refused = PngDecode::too_large;
  if (refused != PngDecode::ok) {
    png_destroy_read_struct(&png, &info, nullptr);
    return refused;
  }
  if (depth < 8) png_set_packing(png);  // one byte per pixel, the values unscaled
  if (depth == 16) png_set_swap(png);   // little-endian u16 rows
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out->bytes_per_value = depth == 16 ? 2 : 1;
  out->raw.resize(size_t(w) * size_t(h) * out->bytes_per_value);
  out->rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) out->rows[y] = &out->raw[size_t(y) * size_t(w) * out->bytes_per_value];
  png_read_image(png, out->rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return PngDecode::ok;
}

}  // namespace

LabelImage read_label_png(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  SEGMUX_CHECK(file != nullptr, "cannot open label image '", path, "': ", std::strerror(errno));
  unsigned char sig[8] = {};
  SEGMUX_CHECK(std::fread(sig, 1, 8, file.get()) == 8 && png_sig_cmp(sig, 0, 8) == 0, "label image '", path,
               "' is not a PNG");
  DecodedPng png;
  PngReadError err;
  switch (decode_label_png(file.get(), &png, &err)) {
    case PngDecode::failed:
      fail("label image '", path, "' cannot be read: ", err.message[0] ? err.message : "out of memory");
    case PngDecode::not_label:
      fail("label image '", path,
           "' is a colour or alpha PNG, not a label image (palette or grayscale PNG whose values are object ids)");
    case PngDecode::too_large:
      fail("label image '", path, "' declares ", png.width, "x", png.height, " pixels (at most ", kMaxFramePixels >> 20,
           " Mpixel)");
    case PngDecode::ok:
      break;
  }
  LabelImage img;
  img.width = int(png.width);
  img.height = int(png.height);
  img.values.resize(size_t(png.width) * size_t(png.height));
  const auto& raw = png.raw;
  for (size_t i = 0; i < img.values.size(); ++i)
    img.values[i] = png.bytes_per_value == 2 ? uint16_t(raw[2 * i] | raw[2 * i + 1] << 8) : raw[i];
  return img;
}

}  // namespace segmux::pipeline
