// The prompt options of `segmux track` beyond --prompt TEXT: --requests FILE.json (official-style
// requests, track_requests.h), box exemplars for the detector (--box without --obj-id) and the
// tracker's prompts for one object (--point / --box with --obj-id, --frame).
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/track_requests.h"
#include "models/sam31/box_exemplars.h"

namespace segmux::apps {

struct TrackPromptOptions {
  std::string requests;  // --requests FILE.json
  std::vector<std::string> points, boxes;
  std::vector<std::string> masks;  // --mask FILE.png[:OBJ_ID[:FRAME]] (apps/mask_args.h)
  std::optional<int64_t> obj_id;
  std::optional<int> frame;
  // --box without --obj-id: exemplars for the detector; with it: the tracker's box for that object.
  bool boxes_are_exemplars() const { return !obj_id && !boxes.empty(); }
  bool has_object_prompt() const { return !points.empty() || (obj_id && !boxes.empty()); }
};

void add_track_prompt_options(CLI::App& app, TrackPromptOptions& o);
// Before the input is opened: which forms go together (usage errors).
void check_track_prompt_options(const TrackPromptOptions& o, const std::vector<std::string>& prompts);
// With the input open: the requests file, or the tracker prompt (--point / --box with --obj-id, checked
// against the frame size) as requests: the text prompts on `start` and a propagation first (if any),
// then the points / box on --frame (default `start`), then a propagation in `direction`. Empty: a
// plain --prompt run (with the box exemplars, if any).
std::vector<TrackRequest> prepare_track_prompts(const TrackPromptOptions& o, const std::vector<std::string>& prompts,
                                                int start, const std::string& direction, int num_frames, int width,
                                                int height);
// The box exemplars (--box without --obj-id), normalised to a width x height video and checked against
// it; they join every --prompt on the prompted frame (--start), or stand alone. A prompt with the boxes only.
pipeline::Prompt track_box_exemplars(const TrackPromptOptions& o, int width, int height);

// A single image file (official is_image_type: an image extension), not a video or frame folder.
bool is_image_file(const std::string& path);

}  // namespace segmux::apps
