// `segmux track` on a live input ("-", a URL, a capture device: pipeline/media/live_stream.h): frames
// are tracked as they arrive (text prompts on the first frame, then one propagation step per frame, as
// the C API's live sessions), outputs written as they come, per-frame latency measured from the frame's
// arrival to its written output. The run ends at the end of the stream, after --max-frames frames or
// on SIGINT / SIGTERM, and then commits what it wrote (a live run's outputs are its record).
#pragma once
#include <CLI/CLI.hpp>

#include "apps/track_video.h"
#include "pipeline/media/live_stream.h"

namespace segmux::apps {

struct LiveTrackOptions {
  pipeline::LiveStreamOptions stream;
  std::string policy = "drop-oldest";
  int keep_frames = 16;  // decoded frames the session holds (frame_source.h LiveFrameSource)
};

void add_live_options(CLI::App& app, LiveTrackOptions& o);
// Tracks s.input as a live stream into s.out_dir (staged; committed when the run ends).
TrackedVideo track_live(const TrackSettings& s, LiveTrackOptions lo, const ModelGetter& get_model);

}  // namespace segmux::apps
