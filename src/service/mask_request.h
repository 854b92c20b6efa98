// The request field of a mask prompt (segmux extension, never in an official request):
//   {"type": "add_prompt", "frame_index": 3, "obj_id": 4, "object_mask": {"size": [H, W], "counts": [...]}}
// COCO uncompressed RLE (the format of every mask segmux writes: runs over the column-major
// flattening, starting with a run of 0s), of any size (pipeline/predictor/mask_prompts.h resizes it).
// Shared by request files (`track --requests`, `track --mask`), serve and `parity --requests`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/masks/rle.h"

namespace segmux::service {

// Largest mask side a request may give (a mask is resized to the video; this bounds the allocation).
inline constexpr int kMaxMaskSide = 16384;

// The mask of an "object_mask" field; errors start with `where` and name the problem (not an object,
// a bad size, runs that are not non-negative integers or do not cover the size exactly).
pipeline::BinaryMask parse_object_mask(const nlohmann::json& v, const std::string& where);
// The field for a mask (what `track --mask FILE.png` puts into its request).
nlohmann::json object_mask_json(const pipeline::BinaryMask& mask);

}  // namespace segmux::service
