// libFuzzer target: label PNGs (pipeline/media/label_png.h), the frames of DAVIS annotation folders and
// of segmux's masks/ that `segmux eval` reads, through read_label_png and both folder loaders
// (eval_inputs.h). libpng refuses a chunk whose CRC is wrong, so each input is also read with its chunk
// CRCs repaired: mutations then reach the decoder (IHDR, PLTE, IDAT, interlacing, bit depths).
// Properties, for any bytes:
//  - a label image or a segmux::Error with a valid UTF-8 message, never a crash or an allocation
//    beyond the declared size's limit (kMaxFramePixels) times a constant;
//  - an image read holds width x height values below 2^16, within the bit depth's range;
//  - its folder read as DAVIS annotations (value = object id, 255 void) and as segmux masks/
//    (value = id + 1) gives back the image: every pixel is in the mask of its value's object (or the
//    void mask) and in no other, for images small enough to expand.
#include <unistd.h>

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "io/printable.h"
#include "io/safetensors.h"
#include "io_seeds.h"
#include "pipeline/media/label_png.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/eval_inputs.h"

using namespace segmux::pipeline;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxExpandPixels = int64_t(1) << 16;

std::string scratch_dir() { return "/tmp/segmux_fuzz_label_png_" + std::to_string(::getpid()); }

void check_error(const segmux::Error& e) {
  if (!segmux::is_valid_utf8(e.what())) __builtin_trap();
}

uint32_t be32(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
         uint32_t(uint8_t(s[at + 3]));
}

// The PNG with every complete chunk's CRC recomputed (chunks: length, type, data, CRC of type + data).
std::string with_crcs_repaired(std::string png) {
  size_t at = 8;
  while (at + 12 <= png.size()) {
    const uint32_t length = be32(png, at);
    if (length > png.size() - at - 12) break;
    const uint32_t crc = uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(&png[at + 4]), uInt(length) + 4));
    for (int k = 0; k < 4; ++k) png[at + 8 + length + k] = char(crc >> (24 - 8 * k));
    at += size_t(length) + 12;
  }
  return png;
}

// Every pixel of `img` in exactly the mask its value names (value + id_offset; void_value: the void
// mask; 0: none).
void check_round_trip(const LabelImage& img, const MaskVideo& v, int id_offset, int void_value) {
  if (v.width != img.width || v.height != img.height || v.frames.size() != 1) __builtin_trap();
  const int frame = v.frames[0];
  std::vector<int> covered(img.values.size(), 0);
  auto mark = [&](const RleMask& rle, int expected) {
    const BinaryMask m = rle_decode(rle);
    for (size_t i = 0; i < m.pixels.size(); ++i)
      if (m.pixels[i]) {
        if (int(img.values[i]) != expected) __builtin_trap();
        ++covered[i];
      }
  };
  for (const auto& [id, masks] : v.objects) mark(masks.at(frame), int(id - id_offset));
  if (v.void_px.count(frame)) mark(v.void_px.at(frame), void_value);
  for (size_t i = 0; i < covered.size(); ++i)
    if (covered[i] != (img.values[i] != 0 ? 1 : 0)) __builtin_trap();
}

void read_one(const std::string& bytes) {
  static const std::string dir = scratch_dir();
  const std::string davis = dir + "/davis", run = dir + "/run";
  static const bool made = [&] {
    std::error_code ec;
    fs::create_directories(davis, ec);
    fs::create_directories(run + "/masks", ec);
    return true;
  }();
  (void)made;
  segmux::write_file_atomic(davis + "/00000.png", bytes.data(), bytes.size());
  segmux::write_file_atomic(run + "/masks/00007.png", bytes.data(), bytes.size());
  LabelImage img;
  try {
    img = read_label_png(davis + "/00000.png");
  } catch (const segmux::Error& e) {
    check_error(e);
    return;
  }
  const int64_t pixels = int64_t(img.width) * img.height;
  if (img.width <= 0 || img.height <= 0 || pixels > kMaxFramePixels || img.values.size() != size_t(pixels))
    __builtin_trap();
  if (pixels > kMaxExpandPixels) return;
  try {
    check_round_trip(img, load_mask_video(davis), 0, 255);
    check_round_trip(img, load_mask_video(run), -1, -1);
  } catch (const segmux::Error& e) {
    check_error(e);
  }
}

// A w x h image of `levels` values in diagonal bands.
std::vector<uint16_t> bands(int w, int h, int levels) {
  std::vector<uint16_t> v(size_t(w) * size_t(h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) v[size_t(y) * w + x] = uint16_t(((x + y) / 3) % levels);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    using segmux::fuzz::bytes_written_by;
    std::vector<std::string> seeds;
    seeds.push_back(bytes_written_by([](const std::string& p) { write_png_gray(p, 16, 8, bands(16, 8, 3), false); }));
    seeds.push_back(bytes_written_by([](const std::string& p) { write_png_gray(p, 9, 7, bands(9, 7, 40), true); }));
    std::vector<uint8_t> indices(12 * 10);
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = uint8_t(i % 7 == 0 ? 255 : i % 3);
    const std::vector<std::array<uint8_t, 3>> palette(256, {0, 128, 255});
    seeds.push_back(bytes_written_by([&](const std::string& p) { write_png_palette(p, 12, 10, indices, palette); }));
    return seeds;
  });
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  read_one(bytes);
  const std::string repaired = with_crcs_repaired(bytes);
  if (repaired != bytes) read_one(repaired);
  return 0;
}
