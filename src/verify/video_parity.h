// `segmux parity --video FIXTURE_DIR`: the whole product path (compiled candidates + the C++ control
// plane) on a fixture folder's video, weights, config and recorded prompt, compared frame by frame
// with the official predictor's outputs (video/trace.json):
//   - the same object ids on every emitted frame (add_prompt and each propagate yield),
//   - the same emitted probabilities (|diff| <= 1e-3; quirks such as -10000 for an object removed by
//     hot start included),
//   - boxes: reported (worst deviation in pixels), not a verdict: they are the extremes of the mask
//     before the non-overlap step, so one flipped pixel at an extreme moves them,
//   - per object per frame: mask IoU >= 0.99, or, for official masks under 1,600 pixels, at most 16
//     differing pixels.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "core/cpu_cores.h"
#include "pipeline/masks/rle.h"

namespace segmux::verify {

struct VideoParityOptions {
  std::string fixture_dir;
  std::string weights;    // default: FIXTURE_DIR/weights.safetensors
  std::string model_dir;  // a model folder or package instead of the weights (e.g. from segmux deploy)
  std::string cache_dir;  // where the compiled candidates go (default: a folder under the system temp)
  int num_threads = usable_cores();
  std::string engine = "smx";  // or "ort": ONNX Runtime on the exported ONNX candidates
  // When set: one JSON line per tracker call written here (verify/call_trace_backend.h), to diff with
  // tools/fixtures/probe_calls.py's log of the official run.
  std::string trace_calls;
  // How the weights are compiled (not for model_dir: a package's precision is fixed). CI's parity stays
  // fp32; bf16 is measured against the same bar (docs/track.md).
  std::string precision = "fp32";
};

struct VideoParityReport {
  int frames_compared = 0;
  int objects_compared = 0;  // object-frame pairs
  int id_mismatches = 0;     // frames whose id lists differ
  int prob_mismatches = 0;
  double worst_box_px = 0;  // largest box-coordinate deviation, pixels
  int mask_misses = 0;      // object-frame pairs under the mask bar
  double worst_iou = 1.0;
  int worst_frame = -1;
  long long worst_obj = -1;
  long long worst_diff_pixels = 0;
  double seconds_per_frame = 0;
  bool passed() const { return frames_compared > 0 && id_mismatches + prob_mismatches + mask_misses == 0; }
};

// The mask bar above: IoU >= 0.99, or at most 16 differing pixels for a reference mask under 1,600.
// `diff_pixels` (optional) receives the number of differing pixels.
bool mask_within_parity_bar(const pipeline::BinaryMask& reference, const pipeline::BinaryMask& got,
                            long long* diff_pixels = nullptr);

VideoParityReport run_video_parity(const VideoParityOptions& opt, std::ostream& log);

// The request list of a trace (video/trace.json "requests": add_prompt with text or points,
// remove_object, propagate_in_video, reset_session) replayed in order on one session, each request's
// outputs (or propagation yields) compared with the official ones under the bar above.
struct RequestReplayReport {
  struct Request {
    std::string type;
    bool matched = false;
    VideoParityReport frames;
  };
  std::vector<Request> requests;
};
RequestReplayReport run_request_replay(const VideoParityOptions& opt, std::ostream& log);

}  // namespace segmux::verify
