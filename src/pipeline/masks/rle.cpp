#include "pipeline/masks/rle.h"

#include "core/error.h"

namespace segmux::pipeline {

int64_t BinaryMask::area() const {
  int64_t n = 0;
  for (uint8_t p : pixels) n += p != 0;
  return n;
}

RleMask rle_encode(const BinaryMask& mask) {
  SEGMUX_CHECK(mask.pixels.size() == size_t(mask.height) * size_t(mask.width), "rle_encode: mask of ", mask.height, "x",
               mask.width, " holds ", mask.pixels.size(), " pixels");
  RleMask rle;
  rle.height = mask.height;
  rle.width = mask.width;
  uint8_t current = 0;  // COCO runs start with background
  int64_t run = 0;
  for (int x = 0; x < mask.width; ++x) {
    for (int y = 0; y < mask.height; ++y) {
      uint8_t v = mask.at(y, x) ? 1 : 0;
      if (v != current) {
        rle.counts.push_back(run);
        run = 0;
        current = v;
      }
      ++run;
    }
  }
  rle.counts.push_back(run);
  return rle;
}

BinaryMask rle_decode(const RleMask& rle) {
  SEGMUX_CHECK(rle.height >= 0 && rle.width >= 0, "rle_decode: negative size ", rle.height, "x", rle.width);
  BinaryMask mask(rle.height, rle.width);
  const int64_t total = int64_t(rle.height) * rle.width;
  int64_t pos = 0;
  uint8_t value = 0;
  for (int64_t c : rle.counts) {
    SEGMUX_CHECK(c >= 0, "rle_decode: negative run length ", c);
    SEGMUX_CHECK(pos + c <= total, "rle_decode: runs exceed the mask size ", rle.height, "x", rle.width);
    for (int64_t i = 0; i < c; ++i, ++pos) {
      if (value) {
        int64_t x = pos / rle.height, y = pos % rle.height;
        mask.at(int(y), int(x)) = 1;
      }
    }
    value ^= 1;
  }
  SEGMUX_CHECK(pos == total, "rle_decode: runs cover ", pos, " of ", total, " pixels");
  return mask;
}

int64_t rle_area(const RleMask& rle) {
  int64_t a = 0;
  for (size_t i = 1; i < rle.counts.size(); i += 2) a += rle.counts[i];
  return a;
}

double mask_iou(const BinaryMask& a, const BinaryMask& b) {
  SEGMUX_CHECK(a.height == b.height && a.width == b.width, "mask_iou: sizes differ (", a.height, "x", a.width, " vs ",
               b.height, "x", b.width, ")");
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    bool pa = a.pixels[i] != 0, pb = b.pixels[i] != 0;
    inter += pa && pb;
    uni += pa || pb;
  }
  return uni == 0 ? 1.0 : double(inter) / double(uni);
}

}  // namespace segmux::pipeline
