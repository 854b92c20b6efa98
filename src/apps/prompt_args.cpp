#include "apps/prompt_args.h"

#include <cmath>
#include <cstdlib>

#include "apps/cli.h"
#include "core/error.h"

namespace segmux::apps {

namespace {

// "a,b,...[:neg]" -> numbers and the label; `count` numbers exactly.
std::vector<float> parse_numbers(const std::string& text, size_t count, bool& positive, const char* option,
                                 const char* form) {
  std::string body = text;
  positive = true;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    const std::string label = text.substr(colon + 1);
    SEGMUX_USAGE_CHECK(label == "neg" || label == "pos", option, " '", text,
                       "': the label after ':' must be 'neg' or 'pos'");
    positive = label == "pos";
    body = text.substr(0, colon);
  }
  std::vector<float> v;
  size_t at = 0;
  while (at <= body.size()) {
    size_t comma = body.find(',', at);
    std::string part = body.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const float x = std::strtof(part.c_str(), &end);
    SEGMUX_USAGE_CHECK(!part.empty() && end && *end == '\0' && std::isfinite(x), option, " '", text, "': expected ",
                       form, " (pixels)");
    v.push_back(x);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  SEGMUX_USAGE_CHECK(v.size() == count, option, " '", text, "': expected ", form, " (pixels)");
  return v;
}

}  // namespace

PointArg parse_point_arg(const std::string& text) {
  PointArg p;
  auto v = parse_numbers(text, 2, p.positive, "--point", "x,y[:neg]");
  p.x = v[0];
  p.y = v[1];
  return p;
}

BoxArg parse_box_arg(const std::string& text) {
  BoxArg b;
  auto v = parse_numbers(text, 4, b.positive, "--box", "x,y,w,h[:neg]");
  b.x = v[0];
  b.y = v[1];
  b.w = v[2];
  b.h = v[3];
  return b;
}

void check_point(const PointArg& p, int width, int height, const std::string& what) {
  SEGMUX_CHECK(p.x >= 0 && p.y >= 0 && p.x <= float(width) && p.y <= float(height), what, ": point (", p.x, ", ", p.y,
               ") is outside the ", width, "x", height, " frame");
}

void check_box(const BoxArg& b, int width, int height, const std::string& what) {
  SEGMUX_CHECK(b.w > 0 && b.h > 0, what, ": box ", b.x, ",", b.y, ",", b.w, ",", b.h,
               " is empty (width and height must be > 0)");
  SEGMUX_CHECK(b.x >= 0 && b.y >= 0 && b.x + b.w <= float(width) && b.y + b.h <= float(height), what, ": box ", b.x,
               ",", b.y, ",", b.w, ",", b.h, " is not inside the ", width, "x", height, " frame");
}

std::array<float, 2> normalised(const PointArg& p, int width, int height) {
  return {p.x / float(width), p.y / float(height)};
}
std::array<float, 4> normalised(const BoxArg& b, int width, int height) {
  return {b.x / float(width), b.y / float(height), b.w / float(width), b.h / float(height)};
}

}  // namespace segmux::apps
