// One video tracked into an output folder with a model that is already open (or opened on demand):
// the body of `segmux track`, shared with `segmux batch` (which loads its model once for many videos),
// so both write the same outputs for the same video and options.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "apps/track_options.h"
#include "core/error.h"
#include "deploy/model_store/model_store.h"

namespace segmux::apps {

struct TrackSettings {
  std::string input, out_dir, direction = "both", overlay = "auto";
  std::vector<std::string> prompts;
  TrackPromptOptions popt;
  int start = 0, max_frames = -1;
  bool quiet = false, json = false, no_masks = false;
  std::string rle = "compressed", masks = "ids";
  double folder_fps = 0;
  std::string engine = "smx";        // for the --json summary
  std::vector<std::string> formats;  // --format: evaluation / annotation files (eval_exports.h)
  int64_t video_id = 1;              // their YTVIS video id
  // When set, the run stops at the next frame with TrackInterrupted (and leaves no output).
  const std::atomic<bool>* stop = nullptr;
};

struct TrackedVideo {
  int frames = 0;
  size_t objects = 0;
  double seconds = 0;
};

class TrackInterrupted : public Error {
 public:
  using Error::Error;
};

// Called once the input and prompts are checked (bad input fails before a model is loaded).
using ModelGetter = std::function<pipeline::OpenedModel&(const pipeline::LogFn& log)>;

// Tracks s.input into s.out_dir (staged: a failure leaves s.out_dir as it was); progress on stderr
// unless s.quiet, the --json summary on stdout when s.json. Usage errors (the start frame outside the
// video, prompt geometry) throw UsageError.
TrackedVideo track_video(const TrackSettings& s, const ModelGetter& get_model);

}  // namespace segmux::apps
