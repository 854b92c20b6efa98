// Label images: PNGs whose pixel values are object ids, not colours (DAVIS annotations are palette
// PNGs whose index is the object id; segmux's own masks/ are 16-bit grayscale with obj_id + 1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace segmux::pipeline {

struct LabelImage {
  int width = 0, height = 0;
  std::vector<uint16_t> values;  // row-major: the palette index or the gray value of each pixel
};

// Reads a palette PNG (indices, whatever the palette's colours) or a grayscale PNG (1 to 16 bits,
// values as stored, not rescaled). Colour and alpha PNGs are refused: their pixels are not labels. Errors
// name the path; the declared size is checked (kMaxFramePixels) before anything is allocated.
LabelImage read_label_png(const std::string& path);

}  // namespace segmux::pipeline
