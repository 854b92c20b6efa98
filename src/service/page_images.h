// What the page gets beside the official answers: frames as PNG (libpng, in memory) and the colour of
// every object, the one the CLI overlay and masks_color/ draw it in (pipeline::id_color), so that the
// page and `segmux track` never disagree and the page keeps no palette of its own.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/backends/model.h"

namespace segmux::service {

// A frame as an 8-bit RGB PNG (fast zlib level: the page asks for frames while it plays them).
std::string encode_png(const pipeline::RgbFrame& frame);

// "#rrggbb" of pipeline::id_color(id).
std::string id_color_hex(int64_t id);
// {"<id>": "#rrggbb"} for each id (the "obj_colors" of the answers that carry object ids).
nlohmann::json object_colors(const std::vector<int64_t>& ids);

}  // namespace segmux::service
