// The C API's sessions: video and live sources, prompts, propagation (callback and pulled).
#include <cstring>
#include <optional>

#include "capi/capi_checks.h"
#include "capi/capi_internal.h"
#include "core/error.h"
#include "core/error_kind.h"
#include "pipeline/media/video_io.h"

using segmux::capi::guard;
using segmux::capi::invalid;
namespace pl = segmux::pipeline;

namespace {

// One call at a time per session: a second concurrent call is refused, never raced.
class SessionUse {
 public:
  explicit SessionUse(segmux_session* s) : s_(s), ok_(s && !s->busy.exchange(true)) {}
  ~SessionUse() {
    if (ok_) s_->busy.store(false);
  }
  bool ok() const { return ok_; }

 private:
  segmux_session* s_;
  bool ok_;
};

segmux_status busy(const char* what) {
  segmux::capi::set_last_error(std::string(what) + ": the session is in use by another call or a pulled propagation");
  return SEGMUX_ERROR_BUSY;
}

// Checks a session handle for a call other than the pull functions.
#define SEGMUX_SESSION_CALL(s, what)                                                  \
  if (const segmux_status st_ = check_session(s, what); st_ != SEGMUX_OK) return st_; \
  SessionUse use_(s);                                                                 \
  if (!use_.ok() || (s)->pull) return busy(what)

segmux_status check_session(const segmux_session* s, const char* what) {
  return segmux::capi::check_handle(s, segmux::capi::HandleType::session, what);
}

segmux_status open_session(segmux_model* model, segmux_session** out, const char* what,
                           const std::function<void(segmux_session&)>& start) {
  if (!out) return invalid(std::string(what) + ": session must not be NULL");
  *out = nullptr;
  if (const segmux_status st = segmux::capi::check_handle(model, segmux::capi::HandleType::model, what)) return st;
  auto s = std::make_unique<segmux_session>();
  s->model = model;
  start(*s);
  std::lock_guard<std::mutex> lock(model->mu);
  ++model->open_sessions;
  *out = s.release();
  return SEGMUX_OK;
}

// The session's video session, on a model session of its own (sessions of one model never share state).
// Outputs are kept, as officially: a click answers with the frame's other objects, a propagation after
// removals fetches them (RLE masks: a few KB a frame; live sessions keep those of the held frames only).
void start_video(segmux_session& s) {
  pl::SessionOptions o;
  o.live_frames_held = s.live ? s.keep_frames : 0;
  s.video = std::make_unique<pl::VideoSession>(*s.model->opened.model, *s.source, s.model->control, o);
}

pl::PropagateRequest request_of(const segmux_propagate_options* o, const segmux_session& s) {
  segmux_propagate_options d;
  segmux_propagate_options_init(&d);
  if (!o) o = &d;
  if (o->struct_size < sizeof(segmux_propagate_options))
    segmux::fail_as(segmux::ErrorKind::InvalidArgument, "propagate options: struct_size is ", o->struct_size,
                    " (call segmux_propagate_options_init)");
  pl::PropagateRequest r;
  switch (o->direction) {
    case SEGMUX_BOTH:
      r.direction = pl::PropagationDirection::Both;
      break;
    case SEGMUX_FORWARD:
      r.direction = pl::PropagationDirection::Forward;
      break;
    case SEGMUX_BACKWARD:
      r.direction = pl::PropagationDirection::Backward;
      break;
    default:
      segmux::fail_as(segmux::ErrorKind::InvalidArgument, "propagate options: direction ", int(o->direction),
                      " is not a segmux_direction");
  }
  if (o->start_frame_index < -1)
    segmux::fail_as(segmux::ErrorKind::InvalidArgument, "propagate options: start_frame_index ", o->start_frame_index,
                    " (-1 = the first prompted frame)");
  if (o->max_frame_num_to_track < -1)
    segmux::fail_as(segmux::ErrorKind::InvalidArgument, "propagate options: max_frame_num_to_track ",
                    o->max_frame_num_to_track, " (-1 = all)");
  if (o->start_frame_index >= 0) {
    segmux::capi::check_frame_index("propagate options: start_frame_index", o->start_frame_index,
                                    s.source->num_frames(), s.live != nullptr);
    r.start_frame_index = o->start_frame_index;
  }
  if (o->max_frame_num_to_track >= 0) r.max_frame_num_to_track = o->max_frame_num_to_track;
  return r;
}

void require_started(const segmux_session* s, const char* what) {
  SEGMUX_CHECK(s->video != nullptr, what, ": the live session has no frame yet (push one first)");
}

// Stops a pulled propagation and waits for its worker.
void stop_pull(segmux_session* s) {
  if (!s->pull) return;
  {
    std::lock_guard<std::mutex> lock(s->pull->mu);
    s->pull->cancel = true;
  }
  s->pull->cv.notify_all();
  if (s->pull->worker.joinable()) s->pull->worker.join();
  s->pull.reset();
}

// The prompt as the predictor takes it, every value checked first: a refused prompt changes nothing
// in the session (the predictor is not called).
pl::Prompt checked_prompt(const segmux_prompt& p, const segmux_session& s) {
  namespace capi = segmux::capi;
  capi::check_frame_index("prompt.frame_index", p.frame_index, s.source->num_frames(), s.live != nullptr);
  capi::check_text("prompt.text", p.text);
  capi::check_finite("prompt.boxes_xywh", p.boxes_xywh, 4 * p.num_boxes);
  capi::check_labels("prompt.box_labels", p.box_labels, p.num_boxes);
  capi::check_finite("prompt.points_xy", p.points_xy, 2 * p.num_points);
  capi::check_labels("prompt.point_labels", p.point_labels, p.num_points);
  if (p.obj_id < -1)
    segmux::fail_as(segmux::ErrorKind::InvalidArgument, "prompt.obj_id ", p.obj_id, " is negative (-1: no object)");
  pl::Prompt prompt;
  if (p.text) prompt.text = std::string(p.text);
  for (size_t i = 0; i < p.num_boxes; ++i) {
    prompt.boxes_xywh.push_back(
        {p.boxes_xywh[4 * i], p.boxes_xywh[4 * i + 1], p.boxes_xywh[4 * i + 2], p.boxes_xywh[4 * i + 3]});
    prompt.box_labels.push_back(p.box_labels[i]);
  }
  for (size_t i = 0; i < p.num_points; ++i) {
    prompt.points_xy.push_back({p.points_xy[2 * i], p.points_xy[2 * i + 1]});
    prompt.point_labels.push_back(p.point_labels[i]);
  }
  if (p.obj_id >= 0) prompt.obj_id = p.obj_id;
  return prompt;
}

}  // namespace

extern "C" {

segmux_status segmux_session_open_video(segmux_model* model, const char* path, segmux_session** session) {
  return guard([&] {
    if (const segmux_status st =
            segmux::capi::check_handle(model, segmux::capi::HandleType::model, "segmux_session_open_video"))
      return st;
    if (!path || !*path) return invalid("segmux_session_open_video: no path");
    segmux::capi::check_existing_path("segmux_session_open_video: the video", path,
                                      segmux::capi::PathKind::file_or_folder);
    return open_session(model, session, "segmux_session_open_video", [&](segmux_session& s) {
      auto reader = segmux::capi::reading_existing_file([&] { return pl::open_video(path); });
      s.width = reader->width();
      s.height = reader->height();
      s.source = reader.get();
      s.frames = std::move(reader);
      start_video(s);
    });
  });
}

segmux_status segmux_session_open_live(segmux_model* model, int width, int height, int keep_frames,
                                       segmux_session** session) {
  return guard([&] {
    if (keep_frames < 0) return invalid("segmux_session_open_live: keep_frames must be >= 0 (0: the default 16)");
    if (width <= 0 || height <= 0 || int64_t(width) * height > pl::kMaxFramePixels)
      return invalid("segmux_session_open_live: a frame size of " + std::to_string(width) + "x" +
                     std::to_string(height) + " (at most " + std::to_string(pl::kMaxFramePixels) + " pixels)");
    return open_session(model, session, "segmux_session_open_live", [&](segmux_session& s) {
      s.keep_frames = keep_frames == 0 ? 16 : keep_frames;
      auto live = std::make_unique<pl::LiveFrameSource>(width, height, s.keep_frames);
      s.live = live.get();
      s.source = s.live;
      s.frames = std::move(live);
      s.width = width;
      s.height = height;
    });
  });
}

segmux_status segmux_session_push_frame(segmux_session* s, const uint8_t* rgb, int width, int height, size_t stride,
                                        int* frame_index) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_push_frame");
    if (!s->live) return invalid("segmux_session_push_frame: not a live session (opened on a video)");
    if (!rgb) return invalid("segmux_session_push_frame: rgb is NULL");
    if (width != s->width || height != s->height)
      return invalid("segmux_session_push_frame: the frame is " + std::to_string(width) + "x" + std::to_string(height) +
                     ", the session's frames are " + std::to_string(s->width) + "x" + std::to_string(s->height));
    if (stride != 0 && stride < size_t(width) * 3)
      return invalid("segmux_session_push_frame: a row stride of " + std::to_string(stride) +
                     " bytes is shorter than a row (" + std::to_string(size_t(width) * 3) + ")");
    if (s->video && s->video->stream_ended())
      return invalid("segmux_session_push_frame: the stream has ended (segmux_session_end_stream)");
    const int index = s->live->push(rgb, width, height, stride);
    if (!s->video) start_video(*s);
    if (frame_index) *frame_index = index;
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_info(segmux_session* s, int* num_frames, int* width, int* height) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_info");
    if (num_frames) *num_frames = s->source->num_frames();
    if (width) *width = s->width;
    if (height) *height = s->height;
    return SEGMUX_OK;
  });
}

void segmux_prompt_init(segmux_prompt* p) {
  if (!p) return;
  std::memset(p, 0, sizeof *p);
  p->struct_size = sizeof *p;
  p->obj_id = -1;
}

segmux_status segmux_session_add_prompt(segmux_session* s, const segmux_prompt* p, segmux_frame** outputs) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_add_prompt");
    if (outputs) *outputs = nullptr;
    if (!p) return invalid("segmux_session_add_prompt: prompt is NULL");
    if (p->struct_size < sizeof(segmux_prompt))
      return invalid("segmux_session_add_prompt: prompt.struct_size is " + std::to_string(p->struct_size) +
                     " (call segmux_prompt_init)");
    if ((p->num_boxes && (!p->boxes_xywh || !p->box_labels)) || (p->num_points && (!p->points_xy || !p->point_labels)))
      return invalid("segmux_session_add_prompt: boxes/points given without their coordinates or labels");
    require_started(s, "segmux_session_add_prompt");
    const pl::Prompt prompt = checked_prompt(*p, *s);
    pl::FrameOutput out = s->video->add_prompt(p->frame_index, prompt);
    if (outputs) *outputs = segmux::capi::make_frame(out, s->width, s->height).release();
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_add_mask(segmux_session* s, int frame_index, int64_t obj_id, const uint8_t* mask,
                                      int width, int height, segmux_frame** outputs) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_add_mask");
    if (outputs) *outputs = nullptr;
    if (!mask) return invalid("segmux_session_add_mask: mask is NULL");
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
      return invalid("segmux_session_add_mask: mask size " + std::to_string(width) + "x" + std::to_string(height) +
                     " is outside 1..16384 pixels per side");
    if (obj_id < 0) return invalid("segmux_session_add_mask: obj_id " + std::to_string(obj_id) + " is negative");
    require_started(s, "segmux_session_add_mask");
    segmux::capi::check_frame_index("frame_index", frame_index, s->source->num_frames(), s->live != nullptr);
    pl::Prompt prompt;
    prompt.obj_id = obj_id;
    prompt.mask = pl::BinaryMask(height, width);
    for (size_t i = 0; i < prompt.mask->pixels.size(); ++i) {
      if (mask[i] != 0 && mask[i] != 1 && mask[i] != 255)
        return invalid("segmux_session_add_mask: the mask is not binary: byte " + std::to_string(i) + " is " +
                       std::to_string(int(mask[i])) + " (0 background, 1 or 255 the object)");
      prompt.mask->pixels[i] = mask[i] != 0;
    }
    if (prompt.mask->area() == 0) return invalid("segmux_session_add_mask: the mask has no foreground pixel");
    pl::FrameOutput out = s->video->add_prompt(frame_index, prompt);
    if (outputs) *outputs = segmux::capi::make_frame(out, s->width, s->height).release();
    return SEGMUX_OK;
  });
}

void segmux_propagate_options_init(segmux_propagate_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->direction = SEGMUX_BOTH;
  o->start_frame_index = -1;
  o->max_frame_num_to_track = -1;
}

segmux_status segmux_session_propagate(segmux_session* s, const segmux_propagate_options* o, segmux_frame_fn on_frame,
                                       void* user) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_propagate");
    if (!on_frame) return invalid("segmux_session_propagate: no callback (use propagate_begin/next_frame to pull)");
    require_started(s, "segmux_session_propagate");
    const pl::PropagateRequest req = request_of(o, *s);
    s->video->propagate(req, [&](const pl::FrameOutput& out) {
      auto f = segmux::capi::make_frame(out, s->width, s->height);
      return on_frame(user, f.get()) != 0;
    });
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_propagate_begin(segmux_session* s, const segmux_propagate_options* o) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_propagate_begin");
    require_started(s, "segmux_session_propagate_begin");
    const pl::PropagateRequest req = request_of(o, *s);
    auto pull = std::make_unique<segmux::capi::Pull>();
    segmux::capi::Pull* p = pull.get();
    pl::VideoSession* video = s->video.get();
    const int w = s->width, h = s->height;
    pull->worker = std::thread([p, video, req, w, h] {
      segmux_status status = SEGMUX_OK;
      std::string error;
      try {
        video->propagate(req, [&](const pl::FrameOutput& out) {
          auto f = segmux::capi::make_frame(out, w, h);
          std::unique_lock<std::mutex> lock(p->mu);
          p->cv.wait(lock, [&] { return !p->slot || p->cancel; });
          if (p->cancel) return false;
          p->slot = std::move(f);
          p->cv.notify_all();
          return true;
        });
      } catch (...) {
        status = segmux::capi::status_of_current_exception(error);
      }
      std::lock_guard<std::mutex> lock(p->mu);
      p->done = true;
      p->status = status;
      p->error = std::move(error);
      p->cv.notify_all();
    });
    s->pull = std::move(pull);
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_next_frame(segmux_session* s, segmux_frame** frame) {
  return guard([&] {
    if (!frame) return invalid("segmux_session_next_frame: frame must not be NULL");
    *frame = nullptr;
    if (const segmux_status st = check_session(s, "segmux_session_next_frame")) return st;
    SessionUse use(s);
    if (!use.ok()) return busy("segmux_session_next_frame");
    if (!s->pull)
      return invalid("segmux_session_next_frame: no propagation was begun (segmux_session_propagate_begin)");
    segmux::capi::Pull& p = *s->pull;
    std::unique_lock<std::mutex> lock(p.mu);
    p.cv.wait(lock, [&] { return p.slot || p.done; });
    if (p.slot) {
      *frame = p.slot.release();
      p.cv.notify_all();
      return SEGMUX_OK;
    }
    const segmux_status status = p.status;
    const std::string error = p.error;
    lock.unlock();
    stop_pull(s);
    if (status != SEGMUX_OK) {
      segmux::capi::set_last_error(error);
      return status;
    }
    return SEGMUX_END;
  });
}

segmux_status segmux_session_cancel(segmux_session* s) {
  return guard([&] {
    if (const segmux_status st = check_session(s, "segmux_session_cancel")) return st;
    SessionUse use(s);
    if (!use.ok()) return busy("segmux_session_cancel");
    stop_pull(s);
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_remove_object(segmux_session* s, int64_t obj_id, int* removed) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_remove_object");
    require_started(s, "segmux_session_remove_object");
    const bool r = obj_id >= 0 && s->video->remove_object(obj_id);  // ids are never negative
    if (removed) *removed = r ? 1 : 0;
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_end_stream(segmux_session* s) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_end_stream");
    if (!s->live) return invalid("segmux_session_end_stream: not a live session (opened on a video)");
    require_started(s, "segmux_session_end_stream");
    s->video->end_stream();
    return SEGMUX_OK;
  });
}

segmux_status segmux_session_reset(segmux_session* s) {
  return guard([&] {
    SEGMUX_SESSION_CALL(s, "segmux_session_reset");
    if (s->video) s->video->reset();
    return SEGMUX_OK;
  });
}

void segmux_session_close(segmux_session* s) {
  if (!segmux::capi::is_live(s, segmux::capi::HandleType::session)) return;  // NULL, or closed before
  try {
    stop_pull(s);
  } catch (...) {  // closing never fails for the caller; the session is gone either way
  }
  {
    std::lock_guard<std::mutex> lock(s->model->mu);
    --s->model->open_sessions;
  }
  delete s;
}

}  // extern "C"
