#include "service/page_images.h"

#include <png.h>
#include <zlib.h>

#include <cstdio>

#include "core/error.h"
#include "pipeline/outputs/outputs.h"

namespace segmux::service {

namespace {

void append_to_string(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}
void no_flush(png_structp) {}

}  // namespace

std::string encode_png(const pipeline::RgbFrame& frame) {
  const size_t row_bytes = size_t(frame.width) * 3;
  SEGMUX_CHECK(frame.width > 0 && frame.height > 0 && frame.pixels.size() == row_bytes * size_t(frame.height),
               "encode_png: a ", frame.width, "x", frame.height, " frame with ", frame.pixels.size(), " bytes");
  // Everything with a destructor lives before setjmp: libpng's errors longjmp back over this frame.
  std::string out;
  std::vector<png_bytep> rows(size_t(frame.height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = const_cast<png_bytep>(frame.pixels.data() + y * row_bytes);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    fail("cannot encode a ", frame.width, "x", frame.height, " frame as PNG (out of memory?)");
  }
  png_set_write_fn(png, &out, append_to_string, no_flush);
  png_set_compression_level(png, Z_BEST_SPEED);
  png_set_IHDR(png, info, png_uint_32(frame.width), png_uint_32(frame.height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

std::string id_color_hex(int64_t id) {
  const auto c = pipeline::id_color(id);
  char hex[8];
  std::snprintf(hex, sizeof hex, "#%02x%02x%02x", c[0], c[1], c[2]);
  return hex;
}

nlohmann::json object_colors(const std::vector<int64_t>& ids) {
  nlohmann::json colors = nlohmann::json::object();
  for (int64_t id : ids) colors[std::to_string(id)] = id_color_hex(id);
  return colors;
}

}  // namespace segmux::service
