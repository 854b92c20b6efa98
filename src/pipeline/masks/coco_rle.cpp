#include "pipeline/masks/coco_rle.h"

#include "core/error.h"
#include "io/printable.h"

namespace segmux::pipeline {

std::string coco_counts_string(const RleMask& rle) {
  std::string s;
  s.reserve(rle.counts.size() * 2);
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    int64_t x = rle.counts[i];
    if (i > 2) x -= rle.counts[i - 2];  // pycocotools' `i > 2`: the third run is written as is
    bool more = true;
    while (more) {
      int64_t c = x & 0x1f;
      x >>= 5;  // arithmetic: negative differences end in a group of ones
      more = (c & 0x10) ? x != -1 : x != 0;
      if (more) c |= 0x20;
      s.push_back(char(c + 48));
    }
  }
  return s;
}

RleMask coco_rle_from_string(const std::string& counts, int height, int width) {
  SEGMUX_CHECK(height >= 0 && width >= 0, "COCO RLE: negative size ", height, "x", width);
  RleMask rle;
  rle.height = height;
  rle.width = width;
  const int64_t total = int64_t(height) * width;
  int64_t covered = 0;
  size_t p = 0;
  while (p < counts.size()) {
    int64_t x = 0;
    int shift = 0;
    bool more = true;
    while (more) {
      SEGMUX_CHECK(p < counts.size(), "COCO RLE: the counts string ends inside a run");
      const int c = int(static_cast<unsigned char>(counts[p++])) - 48;
      SEGMUX_CHECK(c >= 0 && c < 64, "COCO RLE: character '", printable(counts.substr(p - 1, 1)), "' at offset ", p - 1,
                   " is not a counts character ('0' to 'o')");
      SEGMUX_CHECK(shift <= 35, "COCO RLE: a run of more than 8 groups (no mask is that large)");
      x |= int64_t(c & 0x1f) << shift;
      more = (c & 0x20) != 0;
      shift += 5;
      if (!more && (c & 0x10)) x -= int64_t(1) << shift;  // negative: two's complement of shift bits
    }
    if (rle.counts.size() > 2) x += rle.counts[rle.counts.size() - 2];
    SEGMUX_CHECK(x >= 0, "COCO RLE: run ", rle.counts.size(), " has negative length ", x);
    SEGMUX_CHECK(x <= total - covered, "COCO RLE: the runs exceed the ", height, "x", width, " mask");
    covered += x;
    rle.counts.push_back(x);
  }
  SEGMUX_CHECK(covered == total, "COCO RLE: the runs cover ", covered, " of ", total, " pixels");
  return rle;
}

}  // namespace segmux::pipeline
