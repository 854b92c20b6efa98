#include "apps/mask_args.h"

#include <charconv>
#include <filesystem>

#include "apps/cli.h"
#include "core/error.h"
#include "pipeline/media/video_io.h"

namespace segmux::apps {

namespace {

// An integer suffix ":N" at the end of `text` (taken off), if there is one.
template <typename T>
std::optional<T> take_int_suffix(std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) return std::nullopt;
  T v{};
  const char* b = text.data() + colon + 1;
  const char* e = text.data() + text.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return std::nullopt;
  text.resize(colon);
  return v;
}

}  // namespace

MaskArg parse_mask_arg(const std::string& text) {
  MaskArg m;
  std::string rest = text;
  // FILE, FILE:OBJ or FILE:OBJ:FRAME (a file named like that is taken whole).
  if (!std::filesystem::exists(rest)) {
    auto last = take_int_suffix<int64_t>(rest);
    auto before = last ? take_int_suffix<int64_t>(rest) : std::nullopt;
    if (before) {
      m.obj_id = before;
      SEGMUX_USAGE_CHECK(*last >= 0 && *last <= INT32_MAX, "--mask ", text, ": frame ", *last, " is out of range");
      m.frame = int(*last);
    } else {
      m.obj_id = last;
    }
  }
  m.path = rest;
  SEGMUX_USAGE_CHECK(!m.path.empty(), "--mask ", text, ": no file");
  SEGMUX_USAGE_CHECK(!m.obj_id || *m.obj_id >= 0, "--mask ", text, ": obj id ", m.obj_id.value_or(0), " is negative");
  return m;
}

pipeline::BinaryMask read_mask_image(const std::string& path) {
  SEGMUX_CHECK(std::filesystem::is_regular_file(path), "--mask ", path, ": no such file");
  pipeline::RgbImage img;
  try {
    img = pipeline::read_image(path);
  } catch (const Error& e) {
    fail("--mask ", path, ": not a readable image (", e.what(), ")");
  }
  pipeline::BinaryMask m(img.height, img.width);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      const uint8_t* p = img.pixels.data() + (size_t(y) * size_t(img.width) + size_t(x)) * 3;
      const bool gray = p[0] == p[1] && p[1] == p[2];
      SEGMUX_CHECK(gray && (p[0] == 0 || p[0] == 1 || p[0] == 255), "--mask ", path, ": not a binary mask: pixel (", x,
                   ", ", y, ") is (", int(p[0]), ", ", int(p[1]), ", ", int(p[2]),
                   "); expected black (0) background and white (255 or 1) foreground");
      m.at(y, x) = p[0] != 0;
    }
  SEGMUX_CHECK(m.area() > 0, "--mask ", path, ": the mask is empty (no foreground pixel)");
  return m;
}

}  // namespace segmux::apps
