#include "pipeline/media/rotation.h"

extern "C" {
#include <libavutil/display.h>
}
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

int to_quarter_turn(double clockwise) {
  if (!std::isfinite(clockwise)) return 0;
  const long q = std::lround(clockwise / 90.0);
  return int(((q % 4) + 4) % 4) * 90;
}

}  // namespace

int upright_rotation(const int32_t* display_matrix, const char* rotate_tag) {
  // av_display_rotation_get: the counterclockwise angle the matrix turns the frame by (FFmpeg's own
  // autorotate uses its negation as the clockwise turn, as here).
  if (display_matrix) return to_quarter_turn(-av_display_rotation_get(display_matrix));
  if (rotate_tag && *rotate_tag) {
    char* end = nullptr;
    const double deg = std::strtod(rotate_tag, &end);
    if (end != rotate_tag && *end == '\0') return to_quarter_turn(deg);
  }
  return 0;
}

RgbFrame rotate_clockwise(const RgbFrame& img, int degrees) {
  SEGMUX_CHECK(degrees == 0 || degrees == 90 || degrees == 180 || degrees == 270, "rotation by ", degrees,
               " degrees (0, 90, 180 or 270)");
  if (degrees == 0) return img;
  const int w = img.width, h = img.height;
  RgbFrame out;
  out.width = degrees == 180 ? w : h;
  out.height = degrees == 180 ? h : w;
  out.pixels.resize(img.pixels.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      int ox, oy;  // where source pixel (x, y) lands
      if (degrees == 90) {
        ox = h - 1 - y, oy = x;
      } else if (degrees == 180) {
        ox = w - 1 - x, oy = h - 1 - y;
      } else {
        ox = y, oy = w - 1 - x;
      }
      std::memcpy(&out.pixels[(size_t(oy) * size_t(out.width) + size_t(ox)) * 3],
                  &img.pixels[(size_t(y) * size_t(w) + size_t(x)) * 3], 3);
    }
  return out;
}

}  // namespace segmux::pipeline
