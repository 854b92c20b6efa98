#include "service/service.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "core/error.h"
#include "io/json_limits.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/outputs.h"
#include "pipeline/outputs/tracks_json.h"
#include "pipeline/predictor/session_api.h"
#include "service/image_request.h"
#include "service/official_request.h"
#include "service/page_images.h"

namespace segmux::service {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace segmux::pipeline;

namespace {

using Clock = std::chrono::steady_clock;

// One delivered frame, masks kept as RLE (a frame's later output replaces an earlier one).
struct StoredFrame {
  FrameOutput meta;  // without masks
  std::vector<RleMask> masks;
};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

std::string type_of(const json& r) {
  if (!r.is_object()) throw ServiceError(400, "a request must be a JSON object, got " + describe_json(r));
  if (!r.contains("type") || !r.at("type").is_string())
    throw ServiceError(400,
                       "the request has no string 'type' (start_session, add_prompt, propagate_in_video, "
                       "remove_object, reset_session, close_session, cancel_propagation)");
  return r.at("type").get<std::string>();
}

std::string string_field(const json& r, const char* key, const std::string& type) {
  if (!r.contains(key) || !r.at(key).is_string()) throw ServiceError(400, type + ": '" + key + "' must be a string");
  return r.at(key).get<std::string>();
}

void only_fields(const json& r, std::set<std::string> keys, const std::string& type) {
  keys.insert("type");
  for (const auto& [k, v] : r.items())
    if (!keys.count(k)) throw ServiceError(400, type + ": unknown field '" + k + "'");
}

}  // namespace

struct Session {
  std::string id, resource_path, path;
  std::unique_ptr<VideoReader> reader;   // the model's frames
  std::unique_ptr<VideoSession> video;   // on a model session of its own
  std::atomic<bool> have_prompt{false};  // written under the model mutex
  bool closed = false;                   // under the model mutex
  std::atomic<int64_t> last_used_ms{0};
  std::atomic<int> active{0};  // requests in progress: never expired meanwhile
  // cancel_propagation: the frames the model has already computed (it delivers in batches) are not
  // sent either.
  std::atomic<bool> cancelled{false};
  std::mutex out_mu;
  std::map<int, StoredFrame> outputs;
  std::mutex preview_mu;
  std::unique_ptr<VideoReader> preview;  // frames for the page (the model's reader is busy while it runs)

  void store(const FrameOutput& out) {
    StoredFrame f;
    f.meta = out;
    f.meta.masks.clear();
    for (const auto& m : out.masks) f.masks.push_back(rle_encode(m));
    std::lock_guard<std::mutex> lock(out_mu);
    outputs[out.frame_index] = std::move(f);
  }
};

// Marks a session in use for the duration of a request (idle expiry skips it).
struct InUse {
  explicit InUse(Session& s) : s(s) { ++s.active; }
  ~InUse() {
    s.last_used_ms = now_ms();
    --s.active;
  }
  Session& s;
};

json frame_response(const FrameOutput& out) {
  json probs = json::array(), boxes = json::array(), masks = json::array();
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    probs.push_back(round_decimals(out.probs[k], kScoreDecimals));
    json b = json::array();
    for (float v : out.boxes_xywh[k]) b.push_back(round_decimals(v, kBoxDecimals));
    boxes.push_back(std::move(b));
    masks.push_back(mask_rle_json(out.masks[k], RleForm::compressed));
  }
  return {{"frame_index", out.frame_index},
          {"outputs",
           {{"out_obj_ids", out.obj_ids},
            {"out_probs", std::move(probs)},
            {"out_boxes_xywh", std::move(boxes)},
            {"out_binary_masks", std::move(masks)},
            {"out_prompts", out.prompts},
            {"frame_stats",
             {{"num_obj_tracked", out.stats.num_obj_tracked}, {"num_obj_dropped", out.stats.num_obj_dropped}}}}}};
}

// Beside the official fields: every object the session tracks now, shown on this frame or not (the
// page picks a new object's id above them, so a click never lands on a hidden detector object), and
// the colour of each object named (the CLI overlay's: the page draws with it).
namespace {
json with_tracked_ids(json response, const VideoSession& video) {
  std::vector<int64_t> ids = video.object_ids();
  response["tracked_obj_ids"] = ids;
  for (int64_t id : response.at("outputs").at("out_obj_ids").get<std::vector<int64_t>>()) ids.push_back(id);
  response["obj_colors"] = object_colors(ids);
  return response;
}
}  // namespace

RequestService::RequestService(Model& model, ControlConfig config, ServiceLimits limits, ResourceStore& resources)
    : model_(model), config_(config), limits_(limits), resources_(resources), started_(Clock::now()) {}

RequestService::~RequestService() { close_all(); }

json RequestService::parse_body(const std::string& body) {
  try {
    return parse_untrusted_json(body, "the request body");
  } catch (const Error& e) {
    throw ServiceError(400, e.what());
  }
}

bool RequestService::is_stream(const json& r) {
  return r.is_object() && r.contains("type") && r.at("type") == "propagate_in_video";
}

std::shared_ptr<Session> RequestService::find_id(const std::string& id) const {
  std::lock_guard<std::mutex> lock(table_mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    // An id that names another replica reached this one: that replica is down, restarted, or the
    // balancer lost the session.
    const size_t dot = id.find('.');
    if (!replica_.empty() && dot != std::string::npos && id.compare(0, dot, replica_) != 0)
      throw ServiceError(404, "no session '" + id + "' here: it was started on replica '" + id.substr(0, dot) +
                                  "', which did not get this request (down, restarted, or the load balancer lost it)");
    throw ServiceError(404, "no session '" + id + "' (closed, expired or never started)");
  }
  return it->second;
}

std::shared_ptr<Session> RequestService::find(const json& r) const {
  return find_id(string_field(r, "session_id", r.value("type", std::string("request"))));
}

std::unique_lock<std::timed_mutex> RequestService::lock_model(const Session& s) {
  std::unique_lock<std::timed_mutex> lock(work_mu_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::duration<double>(limits_.busy_wait_s)))
    throw ServiceError(503,
                       "the model is busy with another request (one request runs the model at a time); "
                       "retry later");
  if (s.closed) throw ServiceError(404, "session '" + s.id + "' was closed");
  return lock;
}

json RequestService::start_session(const json& r) {
  if (draining_)
    throw ServiceError(503,
                       "start_session: this server is stopping (draining) and starts no new session; "
                       "retry (a load balancer sends it to another replica)");
  only_fields(r, {"resource_path", "session_id", "offload_video_to_cpu", "offload_state_to_cpu"}, "start_session");
  const std::string resource = string_field(r, "resource_path", "start_session");
  std::string id;
  if (r.contains("session_id") && !r.at("session_id").is_null()) {
    id = string_field(r, "session_id", "start_session");
    if (!std::regex_match(id, std::regex("[A-Za-z0-9_.-]{1,64}")))
      throw ServiceError(400, "start_session: 'session_id' must be 1-64 letters, digits, '_', '.' or '-'");
  }
  const std::string path = resources_.resolve(resource);
  auto s = std::make_shared<Session>();
  try {
    s->reader = open_video(path);
  } catch (const Error& e) {
    throw ServiceError(400, std::string("start_session: cannot read '") + resource + "': " + e.what());
  }
  const int n = s->reader->num_frames();
  const int64_t pixels = int64_t(s->reader->width()) * s->reader->height();
  if (n > limits_.max_frames)
    throw ServiceError(413, "start_session: '" + resource + "' has " + std::to_string(n) + " frames (--max-frames " +
                                std::to_string(limits_.max_frames) + ")");
  if (pixels > limits_.max_pixels)
    throw ServiceError(413, "start_session: '" + resource + "' is " + std::to_string(s->reader->width()) + "x" +
                                std::to_string(s->reader->height()) + " (--max-pixels " +
                                std::to_string(limits_.max_pixels) + ")");
  s->resource_path = resource;
  s->path = path;
  // Outputs kept (the session's default), as `segmux track --requests` and the official predictor: a
  // point prompt answers with the frame's kept outputs, and the propagation after it is the partial one.
  s->video = std::make_unique<VideoSession>(model_, *s->reader, config_);
  s->last_used_ms = now_ms();
  std::lock_guard<std::mutex> lock(table_mu_);
  if (int(sessions_.size()) >= limits_.max_sessions)
    throw ServiceError(429, "start_session: " + std::to_string(sessions_.size()) +
                                " sessions are open (--max-sessions " + std::to_string(limits_.max_sessions) +
                                "): close one first");
  if (id.empty()) {
    do id = random_id(replica_);
    while (sessions_.count(id));
  } else if (sessions_.count(id)) {
    throw ServiceError(409, "start_session: session '" + id + "' exists already");
  }
  s->id = id;
  sessions_[id] = s;
  return {{"session_id", id},
          {"num_frames", n},
          {"width", s->reader->width()},
          {"height", s->reader->height()},
          {"fps", s->reader->fps()}};
}

void RequestService::teardown(Session& s) {
  std::unique_ptr<VideoSession> video;
  {
    std::lock_guard<std::mutex> lock(table_mu_);  // cancel() reads the pointer under it
    s.closed = true;
    video.swap(s.video);
  }
  video.reset();  // drops the session's model session: its states and features
}

void RequestService::cancel(Session& s) {
  std::lock_guard<std::mutex> lock(table_mu_);
  s.cancelled = true;
  if (s.video) s.video->cancel();
}

json RequestService::close_session(const json& r) {
  only_fields(r, {"session_id", "run_gc_collect", "clear_cache_threshold"}, "close_session");
  const std::string id = string_field(r, "session_id", "close_session");
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return {{"is_success", true}};  // idempotent, as officially
    s = it->second;
    sessions_.erase(it);
  }
  cancel(*s);  // a running propagation stops after its frame
  std::lock_guard<std::timed_mutex> lock(work_mu_);
  teardown(*s);
  return {{"is_success", true}};
}

json RequestService::handle(const json& r) {
  const std::string type = type_of(r);
  if (type == "start_session") return start_session(r);
  if (type == "close_session") return close_session(r);
  if (type == "propagate_in_video")
    throw ServiceError(400, "propagate_in_video streams its frames: send it to the streaming endpoint");
  if (type == "predict_image") {  // no session: the interactive image predictor (service/image_request.h)
    std::unique_lock<std::timed_mutex> lock(work_mu_, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::duration<double>(limits_.busy_wait_s)))
      throw ServiceError(503, "the model is busy with another request; retry later");
    return predict_image_request(model_, resources_, r);
  }
  if (type != "add_prompt" && type != "remove_object" && type != "reset_session" && type != "cancel_propagation")
    throw ServiceError(400, "unknown request type '" + type +
                                "' (expected start_session, add_prompt, propagate_in_video, remove_object, "
                                "reset_session, close_session, cancel_propagation or predict_image)");
  std::shared_ptr<Session> s = find(r);
  InUse use(*s);
  if (type == "cancel_propagation") {
    only_fields(r, {"session_id"}, type);
    cancel(*s);  // no model lock: the propagation holds it
    return {{"is_success", true}};
  }
  bool have_prompt = s->have_prompt;
  OfficialRequest q;
  try {
    q = parse_official_request(r, type, s->reader->num_frames(), have_prompt, {"session_id"});
  } catch (const Error& e) {
    throw ServiceError(400, e.what());
  }
  auto lock = lock_model(*s);
  json response;
  if (q.type == OfficialRequest::Type::RemoveObject) {
    // An object the tracker has dropped already (it left the video) is still in the delivered frames:
    // removing it there succeeds too.
    const bool tracked = s->video->remove_object(q.obj_id);
    bool delivered = false;
    {
      std::lock_guard<std::mutex> out_lock(s->out_mu);
      for (const auto& [f, stored] : s->outputs)
        delivered |=
            std::find(stored.meta.obj_ids.begin(), stored.meta.obj_ids.end(), q.obj_id) != stored.meta.obj_ids.end();
    }
    if (!tracked && !delivered)
      throw ServiceError(404, "remove_object: no object " + std::to_string(q.obj_id) + " in session '" + s->id + "'");
    std::lock_guard<std::mutex> out_lock(s->out_mu);
    for (auto& [f, stored] : s->outputs) {  // gone from the whole video, as officially
      auto& m = stored.meta;
      for (size_t k = m.obj_ids.size(); k-- > 0;)
        if (m.obj_ids[k] == q.obj_id) {
          m.obj_ids.erase(m.obj_ids.begin() + long(k));
          m.probs.erase(m.probs.begin() + long(k));
          m.boxes_xywh.erase(m.boxes_xywh.begin() + long(k));
          if (k < m.prompts.size()) m.prompts.erase(m.prompts.begin() + long(k));
          stored.masks.erase(stored.masks.begin() + long(k));
        }
    }
    response = {{"is_success", true}};
    if (q.remove_frame_index) {  // official 3.1: the frame's outputs after the removal
      // Recomputed without the removed object (the pixels it held go back to the objects it overlapped),
      // as the official answer; the delivered outputs only for a frame the predictor did not keep.
      std::optional<FrameOutput> recomputed = s->video->frame_outputs(*q.remove_frame_index);
      FrameOutput out;
      out.frame_index = *q.remove_frame_index;
      auto it = s->outputs.find(*q.remove_frame_index);
      if (recomputed) {
        out = std::move(*recomputed);
      } else if (it != s->outputs.end()) {
        out = it->second.meta;
        for (const auto& m : it->second.masks) out.masks.push_back(rle_decode(m));
      }
      response.update(frame_response(out));
    }
    return response;
  }
  const auto t0 = Clock::now();
  try {
    run_official_request(*s->video, q, [&](const FrameOutput& out) {
      s->store(out);
      response = with_tracked_ids(frame_response(out), *s->video);
      return true;
    });
  } catch (const Error& e) {
    throw ServiceError(400, e.what());
  }
  if (q.type == OfficialRequest::Type::ResetSession) {
    std::lock_guard<std::mutex> out_lock(s->out_mu);
    s->outputs.clear();
    response = {{"is_success", true}};
  } else {
    frames_processed_ += 1;
    model_micros_ += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  }
  s->have_prompt = have_prompt;
  return response;
}

RequestService::StreamRun RequestService::stream(const json& r) {
  if (type_of(r) != "propagate_in_video") throw ServiceError(400, "not a propagate_in_video request");
  std::shared_ptr<Session> s = find(r);
  auto use = std::make_shared<InUse>(*s);
  bool have_prompt = s->have_prompt;
  OfficialRequest q;
  try {
    q = parse_official_request(r, "propagate_in_video", s->reader->num_frames(), have_prompt, {"session_id"});
  } catch (const Error& e) {
    throw ServiceError(400, e.what());
  }
  auto lock = std::make_shared<std::unique_lock<std::timed_mutex>>(lock_model(*s));
  return [this, s, use, lock, q](const FrameSink& on_frame) {
    int sent = 0;
    auto t = Clock::now();
    s->cancelled = false;
    run_official_request(*s->video, q, [&](const FrameOutput& out) {
      if (s->cancelled) return false;
      s->store(out);
      model_micros_ += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
      ++frames_processed_;
      ++sent;
      s->last_used_ms = now_ms();
      const bool go_on = on_frame(with_tracked_ids(frame_response(out), *s->video));
      t = Clock::now();
      return go_on;
    });
    lock->unlock();
    return sent;
  };
}

int RequestService::expire_idle() {
  std::vector<std::shared_ptr<Session>> expired;
  const int64_t limit_ms = int64_t(limits_.session_timeout_s * 1000);
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second->active == 0 && now_ms() - it->second->last_used_ms > limit_ms) {
        expired.push_back(it->second);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (expired.empty()) return 0;
  std::lock_guard<std::timed_mutex> lock(work_mu_);
  for (auto& s : expired) teardown(*s);
  sessions_expired_ += int64_t(expired.size());
  return int(expired.size());
}

void RequestService::close_all() {
  std::map<std::string, std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    all.swap(sessions_);
  }
  for (auto& [id, s] : all) cancel(*s);
  std::lock_guard<std::timed_mutex> lock(work_mu_);
  for (auto& [id, s] : all) teardown(*s);
}

int RequestService::open_sessions() const {
  std::lock_guard<std::mutex> lock(table_mu_);
  return int(sessions_.size());
}

void RequestService::cancel_all() {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    for (auto& [id, s] : sessions_) all.push_back(s);
  }
  for (auto& s : all) cancel(*s);
}

json RequestService::metrics() const {
  int64_t rss = 0;
  {
    std::ifstream statm("/proc/self/statm");
    int64_t size = 0, resident = 0;
    if (statm >> size >> resident) rss = resident * int64_t(::sysconf(_SC_PAGESIZE));
  }
  size_t open = 0;
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    open = sessions_.size();
  }
  const double model_s = double(model_micros_.load()) / 1e6;
  return {{"sessions", open},
          {"max_sessions", limits_.max_sessions},
          {"sessions_expired", sessions_expired_.load()},
          {"draining", draining_.load()},
          {"replica_id", replica_},
          {"frames_processed", frames_processed_.load()},
          {"model_seconds", model_s},
          {"frames_per_second", model_s > 0 ? double(frames_processed_.load()) / model_s : 0.0},
          {"rss_bytes", rss},
          {"uptime_seconds", std::chrono::duration<double>(Clock::now() - started_).count()}};
}

std::string RequestService::frame_png(const std::string& id, int frame_index) {
  std::shared_ptr<Session> s = find_id(id);
  InUse use(*s);
  const int n = s->reader->num_frames();
  if (frame_index < 0 || frame_index >= n)
    throw ServiceError(400, "frame " + std::to_string(frame_index) + " is out of range for a video of " +
                                std::to_string(n) + " frames");
  std::lock_guard<std::mutex> lock(s->preview_mu);
  try {
    if (!s->preview) s->preview = open_video(s->path);
    RgbFrame f = s->preview->frame(frame_index);
    return encode_png(f);
  } catch (const Error& e) {
    throw ServiceError(400, std::string("frame ") + std::to_string(frame_index) + ": " + e.what());
  }
}

void RequestService::export_files(Session& s, const std::string& dir, bool tracks, bool overlay,
                                  std::string& overlay_name) {
  std::lock_guard<std::mutex> lock(s.preview_mu);
  if (!s.preview) s.preview = open_video(s.path);
  OutputOptions opt;
  opt.write_masks = false;
  opt.write_json = tracks;
  opt.rle = RleForm::compressed;
  std::vector<std::string> prompts;
  {
    std::lock_guard<std::mutex> out_lock(s.out_mu);
    for (const auto& [f, stored] : s.outputs)
      for (const auto& p : stored.meta.prompts)
        if (std::find(prompts.begin(), prompts.end(), p) == prompts.end()) prompts.push_back(p);
  }
  opt.prompt = prompts.empty() ? "" : prompts.front();
  opt.prompts = prompts;
  opt.source = s.resource_path;
  opt.fps = s.preview->fps();
  if (overlay) {
    overlay_name = fs::path(s.path).extension() == ".gif" ? "overlay.gif" : "overlay.mp4";
    opt.overlay_path = dir + "/" + overlay_name;
  }
  TrackWriter writer(dir, s.preview->width(), s.preview->height(), opt);
  std::lock_guard<std::mutex> out_lock(s.out_mu);
  for (const auto& [f, stored] : s.outputs) {
    FrameOutput out = stored.meta;
    for (const auto& m : stored.masks) out.masks.push_back(rle_decode(m));
    writer.add(s.preview->frame(f), out, s.preview->time_s(f));
  }
  writer.finish();
}

namespace {
// A scratch folder removed when it goes out of scope.
struct ScratchDir {
  explicit ScratchDir(const std::string& parent) {
    std::string p = parent + "/export-XXXXXX";
    SEGMUX_CHECK(::mkdtemp(p.data()) != nullptr, "cannot create a scratch folder in ", parent);
    path = p;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

std::string RequestService::export_tracks(const std::string& id) {
  std::shared_ptr<Session> s = find_id(id);
  InUse use(*s);
  ScratchDir dir(resources_.upload_dir());
  std::string unused;
  try {
    export_files(*s, dir.path, true, false, unused);
  } catch (const Error& e) {
    throw ServiceError(500, std::string("tracks.json: ") + e.what());
  }
  return slurp(dir.path + "/tracks.json");
}

std::string RequestService::export_overlay(const std::string& id, std::string& extension) {
  std::shared_ptr<Session> s = find_id(id);
  InUse use(*s);
  ScratchDir dir(resources_.upload_dir());
  std::string name;
  try {
    export_files(*s, dir.path, false, true, name);
  } catch (const Error& e) {
    throw ServiceError(500, std::string("overlay: ") + e.what());
  }
  extension = fs::path(name).extension().string();
  return slurp(dir.path + "/" + name);
}

}  // namespace segmux::service
