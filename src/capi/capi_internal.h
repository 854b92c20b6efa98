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

#include "deploy/model_store/model_store.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/live_source.h"
#include "pipeline/media/video_io.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/session_api.h"

namespace segmux::capi {

// Every handle the library gave out and has not yet freed, with its type. A handle used after its
// close or free (or any other pointer) is refused with a clear status instead of followed: the C API
// cannot stop a caller from keeping a dangling pointer, but it never dereferences one it knows of.
enum class HandleType { model, session, frame, image_predictor, prediction };
void register_handle(const void* handle, HandleType type);
void unregister_handle(const void* handle);
bool is_live(const void* handle, HandleType type);

// Registers a handle for as long as the object lives (a member of each handle type).
template <HandleType T>
class LiveHandle {
 public:
  explicit LiveHandle(const void* self) : self_(self) { register_handle(self, T); }
  ~LiveHandle() { unregister_handle(self_); }
  LiveHandle(const LiveHandle&) = delete;
  LiveHandle& operator=(const LiveHandle&) = delete;

 private:
  const void* self_;
};

}  // namespace segmux::capi

struct segmux_frame {
  int frame_index = 0;
  int width = 0;
  int height = 0;
  std::vector<int64_t> obj_ids;
  std::vector<float> scores;
  std::vector<float> boxes_xywh;  // 4 per object
  std::vector<segmux::pipeline::BinaryMask> masks;
  std::vector<std::string> prompts;  // per object: the text prompt that found it ("" where none)
  mutable std::mutex rle_mu;         // RLE is made on first request, from any thread
  mutable std::vector<std::unique_ptr<segmux::pipeline::RleMask>> rle;
  segmux::capi::LiveHandle<segmux::capi::HandleType::frame> registered{
      this};  // last: registered when built, first gone
};

struct segmux_model {
  segmux::pipeline::OpenedModel opened;
  segmux::pipeline::ControlConfig control;  // every session's control-plane settings
  std::mutex mu;                            // guards the two below
  int open_sessions = 0;                    // each on a model session of its own
  // Images being segmented and image predictors open, each on a model session of its own: they run
  // beside the sessions (the model is shared and read-only); only closing the model waits for them.
  int image_uses = 0;
  segmux::capi::LiveHandle<segmux::capi::HandleType::model> registered{
      this};  // last: registered when built, first gone
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
  std::unique_ptr<segmux::pipeline::FrameSource> frames;  // a video, or the live frames pushed
  segmux::pipeline::FrameSource* source = nullptr;        // the same frames
  segmux::pipeline::LiveFrameSource* live = nullptr;      // live sessions: the same source
  int keep_frames = 0;                                    // live: frames held
  std::unique_ptr<segmux::pipeline::VideoSession> video;  // null for a live session before its first frame
  int width = 0;
  int height = 0;
  std::atomic<bool> busy{false};
  std::unique_ptr<segmux::capi::Pull> pull;
  segmux::capi::LiveHandle<segmux::capi::HandleType::session> registered{
      this};  // last: registered when built, first gone
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
// A failure of another kind (NOT_FOUND, BUSY, ...) with its message.
segmux_status failed(segmux_status status, const std::string& message);
// The status of a handle argument: OK when `handle` is a live handle of that type, else
// INVALID_ARGUMENT naming `what` (NULL, closed or freed, or not a handle of that type).
segmux_status check_handle(const void* handle, HandleType type, const std::string& what);

std::unique_ptr<segmux_frame> make_frame(const pipeline::FrameOutput& out, int width, int height);

// An image's use of its model (a segmentation while it runs, an image predictor while it is open):
// counted so that segmux_model_close refuses to free the model under it.
class ImageUse {
 public:
  explicit ImageUse(segmux_model* model);
  ~ImageUse();
  ImageUse(const ImageUse&) = delete;
  ImageUse& operator=(const ImageUse&) = delete;

 private:
  segmux_model* model_;
};

// A copy of the caller's RGB pixels (rows `stride` bytes apart; 0: packed); INVALID_ARGUMENT naming
// `what` for a NULL buffer, a size outside [1, kMaxFramePixels] or a stride shorter than a row.
pipeline::RgbImage copy_rgb_image(const std::string& what, const uint8_t* rgb, int width, int height, size_t stride);

}  // namespace segmux::capi
