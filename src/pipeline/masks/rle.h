// COCO "uncompressed" run-length encoding of binary masks, as the official predictor's outputs and the
// fixtures' trace.json use it: {"size": [height, width], "counts": [...]}, runs over the mask flattened
// column-major (x outer, y inner), alternating 0-runs and 1-runs, always starting with a 0-run (which
// may be 0 long).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace segmux::pipeline {

// Binary mask, row-major height x width, one byte per pixel (0 or 1).
struct BinaryMask {
  int height = 0;
  int width = 0;
  std::vector<uint8_t> pixels;
  BinaryMask() = default;
  BinaryMask(int h, int w) : height(h), width(w), pixels(size_t(h) * size_t(w), 0) {}
  uint8_t at(int y, int x) const { return pixels[size_t(y) * size_t(width) + size_t(x)]; }
  uint8_t& at(int y, int x) { return pixels[size_t(y) * size_t(width) + size_t(x)]; }
  int64_t area() const;
};

struct RleMask {
  int height = 0;
  int width = 0;
  std::vector<int64_t> counts;
};

RleMask rle_encode(const BinaryMask& mask);
// Throws segmux::Error when the runs do not add up to height*width or a count is negative.
BinaryMask rle_decode(const RleMask& rle);
int64_t rle_area(const RleMask& rle);

// Intersection over union of two equally sized masks; two empty masks count as identical (1.0).
double mask_iou(const BinaryMask& a, const BinaryMask& b);

}  // namespace segmux::pipeline
