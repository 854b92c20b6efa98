#include "pipeline/media/video_io.h"

#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "io/files.h"
#include "io/paths.h"
#include "io/printable.h"
#include "pipeline/media/media_detail.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace media_detail {

std::string lower_ext(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

bool is_image_ext(const std::string& e) {
  return e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".bmp" || e == ".webp" || e == ".tif" || e == ".tiff" ||
         e == ".ppm";
}

std::string temp_path_for(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void commit_temp(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("cannot write '", path, "': ", std::strerror(errno));
  }
}

// Refuses a frame size beyond kMaxFramePixels (or not positive); `what` names the file and the thing.
void check_frame_size(int64_t width, int64_t height, const std::string& what) {
  SEGMUX_CHECK(width > 0 && height > 0, what, " has no size (", width, "x", height, ")");
  SEGMUX_CHECK(width <= kMaxFramePixels / height, what, " is ", width, "x", height, " = ", width * height,
               " pixels, more than the limit of ", kMaxFramePixels >> 20, " Mpixel");
}

namespace {
uint32_t big_endian_u32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace

// A PNG's declared size, read from its header before any decoder sees the file (decoders allocate the
// frame as declared). Files that are not PNG pass: libav's own checks and to_rgb's apply to them.
void check_png_header(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return;  // libav reports why it cannot be opened
  unsigned char h[24] = {};
  size_t n = std::fread(h, 1, sizeof h, f);
  std::fclose(f);
  static const unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n < 8 || std::memcmp(h, kPngSignature, 8) != 0) return;
  SEGMUX_CHECK(n == sizeof h && std::memcmp(h + 12, "IHDR", 4) == 0, "'", path,
               "' is not a readable PNG: it has no image header (IHDR)");
  check_frame_size(big_endian_u32(h + 16), big_endian_u32(h + 20), "PNG image '" + path + "'");
}

}  // namespace media_detail

using namespace media_detail;

std::unique_ptr<VideoReader> open_video(const std::string& path, double folder_fps) {
  SEGMUX_CHECK(fs::exists(path), "input '", path, "' does not exist");
  if (fs::is_directory(path)) return open_folder_reader(path, folder_fps);
  require_regular_file(path, "input");  // a FIFO blocked the decoder's open for ever
  if (lower_ext(path) == ".gif") return open_gif_reader(path);
  return open_libav_reader(path);
}

namespace {

void write_png(const std::string& path, int width, int height, int color_type, int bit_depth,
               const std::vector<const uint8_t*>& rows, const std::vector<std::array<uint8_t, 3>>* palette = nullptr) {
  AtomicFile out(path);
  std::vector<png_color> plte;  // before setjmp: a longjmp must not skip its destructor
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    const int err = errno;  // libpng's write function fails on a short fwrite: say why
    png_destroy_write_struct(&png, &info);
    out.fail_write(err);
  }
  png_init_io(png, out.stream());
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), bit_depth, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (palette) {
    for (const auto& c : *palette) plte.push_back(png_color{c[0], c[1], c[2]});
    png_set_PLTE(png, info, plte.data(), int(plte.size()));
  }
  png_write_info(png, info);
  if (bit_depth == 16) png_set_swap(png);  // our buffers are little-endian u16
  for (const uint8_t* r : rows) png_write_row(png, r);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  out.commit();
}

}  // namespace

void write_png_rgb(const std::string& path, const RgbImage& img) {
  std::vector<const uint8_t*> rows;
  for (int y = 0; y < img.height; ++y) rows.push_back(pixel_at(img, 0, y));
  write_png(path, img.width, img.height, PNG_COLOR_TYPE_RGB, 8, rows);
}

void write_png_gray(const std::string& path, int width, int height, const std::vector<uint16_t>& values,
                    bool sixteen_bit) {
  SEGMUX_CHECK(values.size() == size_t(width) * size_t(height), "write_png_gray: ", values.size(), " values for ",
               width, "x", height);
  std::vector<uint8_t> buf;
  std::vector<const uint8_t*> rows;
  if (sixteen_bit) {
    for (int y = 0; y < height; ++y)
      rows.push_back(reinterpret_cast<const uint8_t*>(&values[size_t(y) * size_t(width)]));
  } else {
    buf.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      SEGMUX_CHECK(values[i] < 256, "write_png_gray: value ", values[i], " needs 16 bits");
      buf[i] = uint8_t(values[i]);
    }
    for (int y = 0; y < height; ++y) rows.push_back(&buf[size_t(y) * size_t(width)]);
  }
  write_png(path, width, height, PNG_COLOR_TYPE_GRAY, sixteen_bit ? 16 : 8, rows);
}

void write_png_palette(const std::string& path, int width, int height, const std::vector<uint8_t>& indices,
                       const std::vector<std::array<uint8_t, 3>>& palette) {
  SEGMUX_CHECK(indices.size() == size_t(width) * size_t(height), "write_png_palette: ", indices.size(), " indices for ",
               width, "x", height);
  SEGMUX_CHECK(!palette.empty() && palette.size() <= 256, "write_png_palette: ", palette.size(),
               " palette entries (1 to 256)");
  for (uint8_t i : indices)
    SEGMUX_CHECK(i < palette.size(), "write_png_palette: index ", int(i), " beyond the ", palette.size(),
                 "-entry palette");
  std::vector<const uint8_t*> rows;
  for (int y = 0; y < height; ++y) rows.push_back(&indices[size_t(y) * size_t(width)]);
  write_png(path, width, height, PNG_COLOR_TYPE_PALETTE, 8, rows, &palette);
}

namespace {

// Throws unless open_video_writer can write `path`'s format (its extension).
void check_video_writer_path(const std::string& path) {
  // The encoders are H.264 / MPEG-4 (and GIF): other containers (.webm wants VP8/VP9/AV1) failed with
  // libav's bare "Invalid argument" after the file was created.
  const std::string ext = lower_ext(path);
  SEGMUX_CHECK(ext == ".mp4" || ext == ".mov" || ext == ".mkv" || ext == ".m4v" || ext == ".gif", "'", printable(path),
               "': cannot write a video as '", printable(ext.empty() ? "(no extension)" : ext),
               "': the video formats segmux writes are .mp4, .mov, .mkv, .m4v and .gif");
}

}  // namespace

std::unique_ptr<VideoWriter> open_video_writer(const std::string& path, int width, int height, double fps) {
  SEGMUX_CHECK(width > 0 && height > 0, "video writer: bad size ", width, "x", height);
  check_video_writer_path(path);
  if (lower_ext(path) == ".gif") return open_gif_writer(path, width, height, fps);
  return open_libav_writer(path, width, height, fps);
}

}  // namespace segmux::pipeline
