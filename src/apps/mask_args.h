// `segmux track --mask FILE.png[:OBJ_ID[:FRAME]]` (repeatable): a mask prompt for one object (segmux
// extension; pipeline/predictor/mask_prompts.h). OBJ_ID and FRAME default to --obj-id and --frame
// (--start). The image is a binary mask of any size (resized to the video as the official tracker's
// add_new_masks does): black (0) background, white (255, or 1) foreground, nothing else.
#pragma once
#include <optional>
#include <string>

#include "pipeline/masks/rle.h"

namespace segmux::apps {

struct MaskArg {
  std::string path;
  std::optional<int64_t> obj_id;
  std::optional<int> frame;
};

// Syntax only (usage errors name the option and the text).
MaskArg parse_mask_arg(const std::string& text);
// The mask of an image file; errors name the file and the problem (unreadable, not binary, empty).
pipeline::BinaryMask read_mask_image(const std::string& path);

}  // namespace segmux::apps
