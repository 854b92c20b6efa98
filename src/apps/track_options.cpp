#include "apps/track_options.h"

#include <cctype>
#include <filesystem>

#include "apps/cli.h"
#include "apps/prompt_args.h"
#include "core/error.h"

namespace segmux::apps {

void add_track_prompt_options(CLI::App& app, TrackPromptOptions& o) {
  app.add_option("--requests", o.requests,
                 "JSON file of official-style requests (add_prompt, remove_object, propagate_in_video, "
                 "reset_session) run in order instead of --prompt");
  app.add_option("--point", o.points, "point prompt x,y[:neg] in pixels, for --obj-id (not supported yet)");
  app.add_option("--box", o.boxes,
                 "box exemplar x,y,w,h[:neg] in pixels on the --start frame (repeatable; with every --prompt, or "
                 "alone)");
  app.add_option("--obj-id", o.obj_id, "object that --point prompts refine or create");
  app.add_option("--frame", o.frame, "frame of the --point prompts (default: --start)");
}

void check_track_prompt_options(const TrackPromptOptions& o, const std::vector<std::string>& prompts) {
  for (const auto& p : prompts) SEGMUX_USAGE_CHECK(!p.empty(), "--prompt is empty");
  SEGMUX_USAGE_CHECK(o.requests.empty() || prompts.empty(), "--requests and --prompt exclude each other");
  SEGMUX_USAGE_CHECK(o.requests.empty() || (o.points.empty() && o.boxes.empty()),
                     "--requests and --point / --box exclude each other (put them in the requests)");
  SEGMUX_USAGE_CHECK(!o.requests.empty() || !prompts.empty() || !o.points.empty() || !o.boxes.empty(),
                     "no prompt: give --prompt TEXT, --requests FILE, --point or --box");
  for (const auto& p : o.points) parse_point_arg(p);
  for (const auto& b : o.boxes) parse_box_arg(b);
  SEGMUX_USAGE_CHECK(o.points.empty() || o.obj_id, "--point needs --obj-id (the object the points belong to)");
  SEGMUX_USAGE_CHECK(!o.obj_id || *o.obj_id >= 0, "--obj-id ", o.obj_id.value_or(0), " is negative");
}

std::vector<TrackRequest> prepare_track_prompts(const TrackPromptOptions& o, int num_frames, int width, int height) {
  if (!o.points.empty() || !o.boxes.empty()) {
    SEGMUX_CHECK(!o.frame || (*o.frame >= 0 && *o.frame < num_frames), "--frame ", o.frame.value_or(0),
                 " is outside the video (", num_frames, " frames: 0..", num_frames - 1, ")");
    for (const auto& p : o.points) check_point(parse_point_arg(p), width, height, "--point " + p);
    for (const auto& b : o.boxes) check_box(parse_box_arg(b), width, height, "--box " + b);
    if (!o.points.empty())
      fail(
          "--point: point prompts are not supported yet (points in the tracker are not implemented); use --prompt "
          "TEXT or --box");
  }
  if (o.requests.empty()) return {};
  return read_track_requests(o.requests, num_frames);
}

std::vector<sam31::BoxExemplar> track_box_exemplars(const TrackPromptOptions& o, int width, int height) {
  std::vector<sam31::BoxExemplar> out;
  for (const auto& text : o.boxes) {
    const BoxArg b = parse_box_arg(text);
    // As an official request would carry it: normalised x, y, w, h (float32), then the official conversion.
    const auto n = normalised(b, width, height);
    out.push_back(sam31::box_exemplar_from_xywh(n[0], n[1], n[2], n[3], b.positive));
  }
  return out;
}

bool is_image_file(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return std::filesystem::is_regular_file(path) && (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp" ||
                                                    ext == ".webp" || ext == ".tif" || ext == ".tiff");
}

}  // namespace segmux::apps
