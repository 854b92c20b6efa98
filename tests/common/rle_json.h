// A mask written as COCO RLE in JSON, decoded: compressed string counts (what segmux writes, as
// pycocotools does) or an uncompressed list of runs (what the official fixtures hold).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/masks/coco_rle.h"
#include "pipeline/masks/rle.h"

namespace segmux::test {

inline pipeline::BinaryMask mask_of(const nlohmann::json& rle) {
  const int h = rle["size"][0].get<int>(), w = rle["size"][1].get<int>();
  if (rle["counts"].is_string())
    return pipeline::rle_decode(pipeline::coco_rle_from_string(rle["counts"].get<std::string>(), h, w));
  return pipeline::rle_decode(pipeline::RleMask{h, w, rle["counts"].get<std::vector<int64_t>>()});
}

// IoU of two masks of one size (1 when both are empty); a size mismatch counts as no overlap.
inline double mask_iou(const pipeline::BinaryMask& a, const pipeline::BinaryMask& b) {
  if (a.pixels.size() != b.pixels.size()) return 0.0;
  int64_t both = 0, either = 0;
  for (size_t k = 0; k < a.pixels.size(); ++k) {
    both += a.pixels[k] && b.pixels[k];
    either += a.pixels[k] || b.pixels[k];
  }
  return either ? double(both) / double(either) : 1.0;
}

}  // namespace segmux::test
