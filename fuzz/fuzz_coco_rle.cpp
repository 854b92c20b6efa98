// libFuzzer target: COCO compressed RLE (pycocotools' `counts` strings, pipeline/masks/coco_rle.h),
// written by the outputs (tracks.json, serve) and read back by segmux's C++ decoder, and the
// uncompressed runs under it (rle.h). Properties:
//  - any mask: decode(encode(mask)) == mask, through the string form and through the runs;
//  - any string and declared size: runs or a segmux::Error with a valid UTF-8 message, never a crash
//    or an allocation beyond the input's size (the runs are only expanded into pixels below a cap);
//    runs that decode re-encode to a string that decodes to the same runs.
// Input: byte 0 picks the mode; bytes 1-4 the height and width (16 bits each); the rest is the mask's
// bits (mode even) or the counts string (mode odd).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/printable.h"
#include "io_seeds.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/masks/rle.h"

using namespace segmux::pipeline;

namespace {

constexpr int64_t kMaxPixels = int64_t(1) << 16;  // expanding runs into pixels only below this

std::string header(uint8_t mode, int h, int w) {
  return std::string{char(mode), char(h & 0xff), char(h >> 8), char(w & 0xff), char(w >> 8)};
}

void round_trip_mask(int h, int w, const uint8_t* bits, size_t n) {
  BinaryMask m(h, w);
  for (size_t i = 0; i < m.pixels.size(); ++i) m.pixels[i] = n ? (bits[(i / 8) % n] >> (i % 8)) & 1 : 0;
  const RleMask rle = rle_encode(m);
  if (rle_decode(rle).pixels != m.pixels) __builtin_trap();
  const std::string s = coco_counts_string(rle);
  const RleMask back = coco_rle_from_string(s, h, w);
  if (back.counts != rle.counts || rle_decode(back).pixels != m.pixels) __builtin_trap();
}

void decode_string(const std::string& s, int h, int w) {
  RleMask rle;
  try {
    rle = coco_rle_from_string(s, h, w);
  } catch (const segmux::Error& e) {
    if (!segmux::is_valid_utf8(e.what())) __builtin_trap();
    return;
  }
  if (rle.counts.size() > s.size()) __builtin_trap();  // at most one run per character
  const RleMask again = coco_rle_from_string(coco_counts_string(rle), h, w);
  if (again.counts != rle.counts) __builtin_trap();
  if (int64_t(h) * w <= kMaxPixels) {
    const BinaryMask m = rle_decode(rle);
    if (m.area() != rle_area(rle)) __builtin_trap();
    if (rle_decode(rle_encode(m)).pixels != m.pixels) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    std::vector<std::string> seeds = {
        header(1, 5, 8) + "02Q1OSO",  // the hand-computed vectors of tests/outputs/test_coco_rle.cpp
        header(1, 5, 8) + "32Q1OPO",
        header(1, 480, 640) + "PT5oc0",
        header(1, 1, 1) + "01",
        header(1, 3, 3) + "0",
        header(0, 7, 9) + std::string("\x5a\xff\x00\x13\x81", 5),
        header(0, 64, 64) + std::string(64, '\x0f'),
        header(0, 1, 300) + "\x01",
    };
    // Strings the encoder writes for a few masks, as decoder seeds.
    for (auto [h, w] : {std::pair{31, 17}, {240, 320}}) {
      BinaryMask m(h, w);
      for (int y = h / 4; y < h / 2; ++y)
        for (int x = w / 3; x < w; ++x) m.at(y, x) = 1;
      seeds.push_back(header(1, h, w) + coco_counts_string(rle_encode(m)));
    }
    return seeds;
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const int h = data[1] | (data[2] << 8), w = data[3] | (data[4] << 8);
  if (data[0] % 2 == 0) {
    if (int64_t(h) * w <= kMaxPixels) round_trip_mask(h, w, data + 5, size - 5);
    return 0;
  }
  const std::string s(reinterpret_cast<const char*>(data + 5), size - 5);
  decode_string(s, h, w);
  // The same string against a huge declared size: the decoder must not allocate by the size.
  decode_string(s, 46340 + data[1], 46340 + data[3]);
  return 0;
}
