// --format (evaluation and annotation files beside tracks.json: ytvis, coco, cvat, labelstudio;
// pipeline/outputs/eval_exports.h) and --video-id, shared by `segmux track` and `segmux batch`.
#pragma once
#include <CLI/CLI.hpp>

#include "apps/track_video.h"

namespace segmux::apps {

// with_video_id: also --video-id (track; batch numbers its videos by manifest line).
void add_format_options(CLI::App& app, TrackSettings& s, bool with_video_id = true);

}  // namespace segmux::apps
