#include "apps/track_options.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <nlohmann/json.hpp>
#include "apps/cli.h"
#include "apps/mask_args.h"
#include "apps/prompt_args.h"
#include "core/error.h"
#include "io/printable.h"
#include "service/mask_request.h"

namespace segmux::apps {

void add_track_prompt_options(CLI::App& app, TrackPromptOptions& o) {
  app.add_option("--requests", o.requests,
                 "JSON file of official-style requests (add_prompt, remove_object, propagate_in_video, "
                 "reset_session) run in order instead of --prompt");
  app.add_option("--point", o.points, "point prompt x,y[:neg] in pixels for the object --obj-id (repeatable)");
  app.add_option("--box", o.boxes,
                 "box x,y,w,h[:neg] in pixels: without --obj-id a box exemplar for the detector on the --start frame "
                 "(repeatable; with every --prompt, or alone); with --obj-id the tracker's box for that object (one; a "
                 "segmux extension: official requests send boxes to the detector)");
  app.add_option("--mask", o.masks,
                 "mask prompt FILE.png[:OBJ_ID[:FRAME]]: a binary mask image (black background, white object; any "
                 "size, resized to the video) for an object (default --obj-id) on a frame (default --frame); "
                 "repeatable (a segmux extension: official requests take no masks)");
  app.add_option("--obj-id", o.obj_id,
                 "object that --point / --box / --mask create (new id) or refine (an id of --prompt)");
  app.add_option("--frame", o.frame, "frame of the --point / --box / --mask prompts (default: --start)");
}

void check_track_prompt_options(const TrackPromptOptions& o, const std::vector<std::string>& prompts) {
  for (const auto& p : prompts) SEGMUX_USAGE_CHECK(!p.empty(), "--prompt is empty");
  for (const auto& p : prompts)  // it reached the outputs' JSON as a raw "type_error 316" before
    SEGMUX_USAGE_CHECK(is_valid_utf8(p), "--prompt \"", printable(p, 80), "\" is not valid UTF-8 text");
  SEGMUX_USAGE_CHECK(o.requests.empty() || prompts.empty(), "--requests and --prompt exclude each other");
  SEGMUX_USAGE_CHECK(o.requests.empty() || (o.points.empty() && o.boxes.empty() && o.masks.empty()),
                     "--requests and --point / --box / --mask exclude each other (put them in the requests)");
  SEGMUX_USAGE_CHECK(
      !o.requests.empty() || !prompts.empty() || !o.points.empty() || !o.boxes.empty() || !o.masks.empty(),
      "no prompt: give --prompt TEXT, --requests FILE, --point, --box or --mask");
  for (const auto& m : o.masks)
    SEGMUX_USAGE_CHECK(parse_mask_arg(m).obj_id || o.obj_id, "--mask ", m,
                       " needs an object id (FILE:OBJ_ID or --obj-id)");
  for (const auto& p : o.points) parse_point_arg(p);
  for (const auto& b : o.boxes) parse_box_arg(b);
  SEGMUX_USAGE_CHECK(o.points.empty() || o.obj_id, "--point needs --obj-id (the object the points belong to)");
  if (o.obj_id) {  // the tracker's box for that object
    SEGMUX_USAGE_CHECK(o.boxes.size() <= 1, "--box: an object takes one box, got ", o.boxes.size());
    for (const auto& b : o.boxes)
      SEGMUX_USAGE_CHECK(parse_box_arg(b).positive, "--box ", b, ": a tracker box is positive (no :neg)");
  }
  SEGMUX_USAGE_CHECK(!o.obj_id || !o.points.empty() || !o.boxes.empty() || !o.masks.empty(),
                     "--obj-id needs --point, --box or --mask");
  SEGMUX_USAGE_CHECK(!o.obj_id || *o.obj_id >= 0, "--obj-id ", o.obj_id.value_or(0), " is negative");
}

std::vector<TrackRequest> prepare_track_prompts(const TrackPromptOptions& o, const std::vector<std::string>& prompts,
                                                int start, const std::string& direction, int num_frames, int width,
                                                int height) {
  if (!o.has_object_prompt() && o.masks.empty())
    return o.requests.empty() ? std::vector<TrackRequest>{} : read_track_requests(o.requests, num_frames);
  SEGMUX_CHECK(!o.frame || (*o.frame >= 0 && *o.frame < num_frames), "--frame ", o.frame.value_or(0),
               " is outside the video (", num_frames, " frames: 0..", num_frames - 1, ")");
  // The official request sequence: text prompts and a propagation first (a refinement needs outputs
  // on its frame), then the points / box, then a propagation that carries them through the video.
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : prompts) list.push_back({{"type", "add_prompt"}, {"frame_index", start}, {"text", p}});
  const nlohmann::json propagate = {{"type", "propagate_in_video"}, {"propagation_direction", direction}};
  if (!prompts.empty()) list.push_back(propagate);
  const int frame = o.frame.value_or(start);
  // The propagation after them starts at the first prompted frame (officially required without text).
  std::optional<int> first_frame;
  if (o.has_object_prompt()) first_frame = frame;
  nlohmann::json add = {{"type", "add_prompt"}, {"frame_index", frame}, {"obj_id", o.obj_id.value_or(0)}};
  for (const auto& text : o.points) {
    const PointArg p = parse_point_arg(text);
    check_point(p, width, height, "--point " + text);
    const auto xy = normalised(p, width, height);
    add["points"].push_back({xy[0], xy[1]});
    add["point_labels"].push_back(p.positive ? 1 : 0);
  }
  // --box with --obj-id: the tracker's box for that object, the segmux extension 'object_box' (an
  // official request's bounding_boxes would go to the detector).
  for (const auto& text : o.boxes) {
    const BoxArg b = parse_box_arg(text);
    check_box(b, width, height, "--box " + text);
    const auto xywh = normalised(b, width, height);
    add["object_box"] = {xywh[0], xywh[1], xywh[2], xywh[3]};
  }
  if (o.has_object_prompt()) list.push_back(add);
  // --mask: the segmux extension 'object_mask' (service/mask_request.h), one request per mask.
  for (const auto& text : o.masks) {
    const MaskArg m = parse_mask_arg(text);
    const int f = m.frame.value_or(frame);
    SEGMUX_CHECK(f < num_frames, "--mask ", text, ": frame ", f, " is outside the video (", num_frames, " frames: 0..",
                 num_frames - 1, ")");
    first_frame = std::min(first_frame.value_or(f), f);
    list.push_back({{"type", "add_prompt"},
                    {"frame_index", f},
                    {"obj_id", m.obj_id.value_or(o.obj_id.value_or(0))},
                    {"object_mask", service::object_mask_json(read_mask_image(m.path))}});
  }
  nlohmann::json again = propagate;
  again["start_frame_index"] = prompts.empty() ? first_frame.value_or(frame) : start;
  list.push_back(again);
  std::vector<TrackRequest> out;
  bool have_prompt = false;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(service::parse_official_request(list[i],
                                                  list[i].contains("object_mask") ? "--mask"
                                                  : list[i].contains("obj_id")    ? "--point / --box"
                                                                                  : "request " + std::to_string(i),
                                                  num_frames, have_prompt));
  return out;
}

pipeline::Prompt track_box_exemplars(const TrackPromptOptions& o, int width, int height) {
  pipeline::Prompt out;
  if (!o.boxes_are_exemplars()) return out;
  for (const auto& text : o.boxes) {
    const BoxArg b = parse_box_arg(text);
    check_box(b, width, height, "--box " + text);
    // As an official request carries it: normalised x, y, w, h (float32); the session converts it.
    out.boxes_xywh.push_back(normalised(b, width, height));
    out.box_labels.push_back(b.positive ? 1 : 0);
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
