// `segmux serve`'s request layer, without HTTP: official SAM 3.1 requests (JSON) -> the session API
// (one ConceptSet per session, the request mapping of official_request.h) -> official responses
// (masks as COCO compressed RLE, the tracks.json encoding). Unit-testable without sockets.
//
// One model serves every session, each with its own model session (its text, frames and tracker
// memories: requests of different sessions interleave and each gets what it would alone). The model runs one
// request at a time: every request that runs the model (add_prompt, propagate_in_video,
// remove_object, reset_session, close_session) takes one mutex; a request that cannot get it within
// ServiceLimits::busy_wait_s gets 503 ("the model is busy"). cancel_propagation, frame previews,
// exports and metrics do not wait for the model. Sessions idle for longer than session_timeout_s are
// closed by expire_idle() (the server calls it periodically), which frees their model memory.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/backends/model.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/control_plane.h"
#include "service/resources.h"

namespace segmux::service {

struct ServiceLimits {
  int max_sessions = 4;
  int max_frames = 5000;                      // frames of a video
  int64_t max_pixels = int64_t(3840) * 2160;  // width x height of a video
  double session_timeout_s = 1200;            // idle time before a session is closed (official default)
  double busy_wait_s = 30;                    // how long a request waits for the model before 503
};

struct Session;

class RequestService {
 public:
  // `model` outlives the service.
  RequestService(pipeline::Model& model, pipeline::ControlConfig config, ServiceLimits limits,
                 ResourceStore& resources);
  ~RequestService();

  // Parses a request body (untrusted JSON limits); throws ServiceError 400 naming the problem.
  static nlohmann::json parse_body(const std::string& body);
  static bool is_stream(const nlohmann::json& request);  // propagate_in_video

  // Every request but propagate_in_video; returns the official response. Throws ServiceError.
  nlohmann::json handle(const nlohmann::json& request);
  // propagate_in_video in two steps, so that a bad request is refused before any output: stream()
  // checks it and waits for the model (ServiceError), and returns the run. The run sends each frame's
  // {"frame_index", "outputs"} to on_frame; on_frame returning false (client gone) or a
  // cancel_propagation stops it after the frame in progress. It returns the number of frames sent and
  // holds the model until it returns (or is destroyed unrun).
  using FrameSink = std::function<bool(const nlohmann::json&)>;
  using StreamRun = std::function<int(const FrameSink&)>;
  StreamRun stream(const nlohmann::json& request);

  // Session ids made by start_session name this replica (random_id); "" = plain UUIDs.
  void set_replica_id(std::string replica) { replica_ = std::move(replica); }
  // Draining (the server is stopping): start_session is refused with 503, every other request works.
  void set_draining(bool on) { draining_ = on; }
  bool draining() const { return draining_; }
  int open_sessions() const;
  // Stops every running propagation after its frame (the sessions stay open).
  void cancel_all();

  // Closes sessions idle for longer than the timeout (none while a request runs on them); returns how many.
  int expire_idle();
  void close_all();
  // {"sessions", "max_sessions", "frames_processed", "frames_per_second", "rss_bytes", ...}
  nlohmann::json metrics() const;

  // For the page: a frame as PNG; the session's tracks.json (segmux track's format) or overlay video
  // (file bytes) from the outputs delivered so far. Throw ServiceError.
  std::string frame_png(const std::string& session_id, int frame_index);
  std::string export_tracks(const std::string& session_id);
  std::string export_overlay(const std::string& session_id, std::string& extension);

 private:
  std::shared_ptr<Session> find(const nlohmann::json& request) const;
  std::shared_ptr<Session> find_id(const std::string& id) const;
  nlohmann::json start_session(const nlohmann::json& request);
  nlohmann::json close_session(const nlohmann::json& request);
  void teardown(Session& s);  // under work_mu_
  void cancel(Session& s);
  std::unique_lock<std::timed_mutex> lock_model(const Session& s);
  void export_files(Session& s, const std::string& dir, bool tracks, bool overlay, std::string& overlay_name);

  pipeline::Model& model_;
  pipeline::ControlConfig config_;
  ServiceLimits limits_;
  ResourceStore& resources_;
  mutable std::mutex table_mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  std::string replica_;
  std::atomic<bool> draining_{false};
  std::timed_mutex work_mu_;
  std::atomic<int64_t> frames_processed_{0};
  std::atomic<int64_t> model_micros_{0};
  std::atomic<int64_t> sessions_expired_{0};
  std::chrono::steady_clock::time_point started_;
};

// The official per-frame response {"frame_index", "outputs": {out_obj_ids, out_probs, out_boxes_xywh,
// out_binary_masks (COCO RLE), frame_stats}} plus "out_prompts" (the concept of each object).
nlohmann::json frame_response(const pipeline::FrameOutput& out);

}  // namespace segmux::service
