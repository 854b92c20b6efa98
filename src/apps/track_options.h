// The prompt options of `segmux track` beyond --prompt TEXT: --requests FILE.json (official-style
// requests, track_requests.h) and the geometry prompts --point / --box with --obj-id / --frame.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/track_requests.h"

namespace segmux::apps {

struct TrackPromptOptions {
  std::string requests;  // --requests FILE.json
  std::vector<std::string> points, boxes;
  std::optional<int64_t> obj_id;
  std::optional<int> frame;
};

void add_track_prompt_options(CLI::App& app, TrackPromptOptions& o);
// Before the input is opened: which forms go together (usage errors).
void check_track_prompt_options(const TrackPromptOptions& o, const std::vector<std::string>& prompts);
// With the input open: the requests file, or the --point / --box prompt (checked against the frame
// size) as requests: the text prompts on `start` and a propagation first (if any), then the points /
// box on --frame (default `start`), then a propagation in `direction`. Empty: plain --prompt run.
std::vector<TrackRequest> prepare_track_prompts(const TrackPromptOptions& o, const std::vector<std::string>& prompts,
                                                int start, const std::string& direction, int num_frames, int width,
                                                int height);

// A single image file (official is_image_type: an image extension), not a video or frame folder.
bool is_image_file(const std::string& path);

}  // namespace segmux::apps
