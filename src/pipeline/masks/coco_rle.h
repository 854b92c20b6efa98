// COCO *compressed* RLE, the string `counts` form pycocotools reads and writes (maskApi.c rleToString /
// rleFrString): the run lengths of RleMask (column-major, starting with a 0-run) are written one after
// another, each as the difference from the run two places back (from the fourth run on: pycocotools
// starts the differences at index 3, not 2), in little-endian groups of 5 bits, each group as the
// character 48 + bits, with bit 5 (0x20) set while more groups follow; the last group's bit 4 is the
// sign. {"size": [height, width], "counts": "<string>"} is what pycocotools.mask.decode takes.
#pragma once
#include <string>

#include "pipeline/masks/rle.h"

namespace segmux::pipeline {

std::string coco_counts_string(const RleMask& rle);
// Throws segmux::Error when the string is not a valid counts string for a height x width mask (bad
// characters, a run that does not end, negative runs, runs that do not cover the mask exactly).
RleMask coco_rle_from_string(const std::string& counts, int height, int width);

}  // namespace segmux::pipeline
