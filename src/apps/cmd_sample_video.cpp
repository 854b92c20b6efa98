// segmux sample-video OUT [--frames N --size WxH]: writes the built-in synthetic video (coloured shapes
// moving over a gradient), so the demo and tests have an input without downloading anything.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <regex>

#include "apps/cli.h"
#include "apps/commands.h"
#include "core/error.h"
#include "pipeline/media/sample_video.h"

namespace segmux::apps {
namespace {

int run_sample_video(int argc, char** argv) {
  CLI::App app{
      "(maintenance) Write the built-in synthetic sample video: a red disc, a blue square and a green\n"
      "triangle moving over a gradient, 10 fps. The format follows OUT's extension (.mp4, .gif, ...).",
      "segmux sample-video"};
  std::string out, size = "320x240";
  int frames = 20;
  app.add_option("out", out, "output file (.mp4, .mkv, .gif, ...)")->required();
  app.add_option("--frames,-n", frames, "number of frames (default 20)");
  app.add_option("--size", size, "WIDTHxHEIGHT (default 320x240)");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  std::smatch m;
  SEGMUX_USAGE_CHECK(std::regex_match(size, m, std::regex("([0-9]{1,5})x([0-9]{1,5})")), "--size '", size,
                     "' is not WIDTHxHEIGHT (e.g. 320x240)");
  const int width = std::stoi(m[1]), height = std::stoi(m[2]);
  // Even sizes: H.264 and MPEG-4 encoders with 4:2:0 chroma need them.
  SEGMUX_USAGE_CHECK(
      width >= 16 && height >= 16 && width <= 8192 && height <= 8192 && width % 2 == 0 && height % 2 == 0, "--size ",
      width, "x", height, ": width and height must be even and within 16..8192");
  SEGMUX_USAGE_CHECK(frames >= 1 && frames <= 100000, "--frames ", frames, " must be within 1..100000");
  pipeline::write_sample_video(out, frames, width, height);
  std::fprintf(stderr, "wrote %s: %d frames %dx%d @ 10 fps\n", out.c_str(), frames, width, height);
  return 0;
}

CommandRegistration reg("sample-video", "(maintenance) write the built-in synthetic sample video", run_sample_video);

}  // namespace
}  // namespace segmux::apps
