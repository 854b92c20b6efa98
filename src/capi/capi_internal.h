// The C API's handles and its exception boundary (include/segmux/segmux.h is the contract). Every
// exported function runs its body through guard(): exceptions become a status and the calling
// thread's last-error message, and never cross into C.
#pragma once
#include <segmux/segmux.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/masks/rle.h"
#include "pipeline/media/live_source.h"
#include "pipeline/model_store/model_store.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/session_api.h"

struct segmux_frame {
  int frame_index = 0;
  int width = 0;
  int height = 0;
  std::vector<int64_t> obj_ids;
  std::vector<float> scores;
  std::vector<float> boxes_xywh;  // 4 per object
  std::vector<segmux::pipeline::BinaryMask> masks;
  mutable std::mutex rle_mu;  // RLE is made on first request, from any thread
  mutable std::vector<std::unique_ptr<segmux::pipeline::RleMask>> rle;
};

struct segmux_model {
  segmux::pipeline::OpenedModel opened;
  std::unique_ptr<segmux::pipeline::VideoPredictor> predictor;
  std::mutex mu;                      // guards `session`
  segmux_session* session = nullptr;  // the one open session (a backend serves one video at a time)
};

namespace segmux::capi {

// A pulled propagation: the predictor runs on `worker`, handing over one frame at a time.
struct Pull {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<segmux_frame> slot;  // the frame waiting for next_frame
  bool done = false;                   // the worker has finished (status/error say how)
  bool cancel = false;
  segmux_status status = SEGMUX_OK;
  std::string error;
  std::thread worker;
};

}  // namespace segmux::capi

struct segmux_session {
  segmux_model* model = nullptr;
  std::string id;                                                // the predictor's session id ("" before a live start)
  segmux::pipeline::FrameSource* source = nullptr;               // the frames (owned by the predictor's session)
  segmux::pipeline::LiveFrameSource* live = nullptr;             // live sessions: the same source
  std::unique_ptr<segmux::pipeline::LiveFrameSource> unstarted;  // live: held until the first frame
  int width = 0;
  int height = 0;
  std::atomic<bool> busy{false};
  std::unique_ptr<segmux::capi::Pull> pull;
};

namespace segmux::capi {

// The status of the exception being handled; its message goes to `message`.
segmux_status status_of_current_exception(std::string& message);
void set_last_error(const std::string& message);

// Runs `body` (returning a segmux_status), turning any exception into a status and message.
template <typename Body>
segmux_status guard(Body&& body) noexcept {
  try {
    set_last_error("");
    return body();
  } catch (...) {
    std::string message;
    segmux_status status = status_of_current_exception(message);
    try {
      set_last_error(message);
    } catch (...) {  // no memory for the message: the status still says what happened
    }
    return status;
  }
}

// A failed argument check at the boundary.
segmux_status invalid(const std::string& message);

std::unique_ptr<segmux_frame> make_frame(const pipeline::FrameOutput& out, int width, int height);

}  // namespace segmux::capi
