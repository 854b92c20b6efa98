// Geometry prompts on the command line: --point x,y[:neg] and --box x,y,w,h[:neg], in pixels of the
// input (x to the right, y down, from the top-left corner). Parsed and checked against the frame size.
// Boxes without an object id are the detector's exemplars (segment, track); points, and a box with
// --obj-id, go to the tracker for that object (track).
#pragma once
#include <array>
#include <string>
#include <vector>

namespace segmux::apps {

struct PointArg {
  float x = 0, y = 0;
  bool positive = true;
};
struct BoxArg {
  float x = 0, y = 0, w = 0, h = 0;
  bool positive = true;
};

// Syntax only (usage errors name the option and the text).
PointArg parse_point_arg(const std::string& text);
BoxArg parse_box_arg(const std::string& text);

// Against a frame of width x height: points inside it, boxes non-empty and inside it. `what` names
// the option or request in the error.
void check_point(const PointArg& p, int width, int height, const std::string& what);
void check_box(const BoxArg& b, int width, int height, const std::string& what);

// Normalised to [0, 1] (the official request API's units): [x, y] and [x, y, w, h].
std::array<float, 2> normalised(const PointArg& p, int width, int height);
std::array<float, 4> normalised(const BoxArg& b, int width, int height);

}  // namespace segmux::apps
