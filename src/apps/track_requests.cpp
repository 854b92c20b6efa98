#include "apps/track_requests.h"

#include <set>

#include "core/error.h"
#include "io/json_limits.h"

namespace segmux::apps {

namespace {

using nlohmann::json;
using pipeline::PropagationDirection;

constexpr size_t kMaxRequests = 100000;
constexpr size_t kMaxRequestsFileBytes = size_t(16) << 20;

struct Checker {
  const json& r;
  std::string where;
  int num_frames;

  template <typename... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail(where, ": ", parts...);
  }
  bool has(const char* key) const { return r.contains(key) && !r.at(key).is_null(); }
  int64_t integer(const char* key) const {
    const json& v = r.at(key);
    if (!v.is_number_integer()) bad("'", key, "' must be an integer, got ", describe_json(v));
    return v.get<int64_t>();
  }
  int frame(const char* key) const {
    const int64_t f = integer(key);
    if (f < 0 || f >= num_frames)
      bad("'", key, "' ", f, " is out of range for a video of ", num_frames, " frames (0..", num_frames - 1, ")");
    return int(f);
  }
  void only(std::set<std::string> keys) const {
    keys.insert("type");
    keys.insert("session_id");
    for (const auto& [k, v] : r.items())
      if (!keys.count(k)) bad("unknown field '", k, "'");
  }
  // Points / boxes: normalised coordinates, as the official API takes them; checked, then refused.
  void geometry() const {
    for (const char* key : {"points", "bounding_boxes"}) {
      if (!has(key)) continue;
      const json& list = r.at(key);
      const size_t n = std::string(key) == "points" ? 2 : 4;
      if (!list.is_array() || list.empty()) bad("'", key, "' must be a non-empty array");
      for (const auto& item : list) {
        if (!item.is_array() || item.size() != n) bad("'", key, "' entries must be arrays of ", n, " numbers");
        for (const auto& x : item)
          if (!x.is_number() || x.get<double>() < 0 || x.get<double>() > 1)
            bad("'", key, "' coordinates must be numbers in [0, 1] (normalised), got ", describe_json(x));
        if (n == 4 && !(item[2].get<double>() > 0 && item[3].get<double>() > 0)) bad("an empty box in '", key, "'");
        if (n == 4 &&
            (item[0].get<double>() + item[2].get<double>() > 1 || item[1].get<double>() + item[3].get<double>() > 1))
          bad("a box in '", key, "' reaches outside the frame");
      }
      const char* labels = n == 2 ? "point_labels" : "bounding_box_labels";
      if (has(labels) && (!r.at(labels).is_array() || r.at(labels).size() != list.size()))
        bad("'", labels, "' must list one label per entry of '", key, "'");
    }
    if (has("points") && !has("obj_id")) bad("points need an 'obj_id'");
    if (has("points") || has("bounding_boxes"))
      bad("point and box prompts are not supported yet (geometry in the detector and points in the tracker are "
          "not implemented); use a text prompt");
  }
};

TrackRequest parse_one(const json& r, size_t index, int num_frames, bool& have_prompt) {
  TrackRequest q;
  q.name = "request " + std::to_string(index);
  if (!r.is_object()) fail(q.name, ": a request must be an object, got ", describe_json(r));
  if (!r.contains("type") || !r.at("type").is_string()) fail(q.name, ": no string 'type'");
  const std::string type = r.at("type").get<std::string>();
  q.name += " (" + type + ")";
  Checker c{r, q.name, num_frames};
  if (type == "add_prompt") {
    c.only({"frame_index", "text", "output_prob_thresh", "points", "point_labels", "bounding_boxes",
            "bounding_box_labels", "obj_id", "clear_old_points", "clear_old_boxes"});
    q.type = TrackRequest::Type::AddPrompt;
    if (!c.has("frame_index")) c.bad("no 'frame_index'");
    q.frame_index = c.frame("frame_index");
    c.geometry();
    if (!c.has("text") || !r.at("text").is_string() || r.at("text").get<std::string>().empty())
      c.bad("'text' must be a non-empty string");
    q.text = r.at("text").get<std::string>();
    if (c.has("output_prob_thresh")) {
      const json& t = r.at("output_prob_thresh");
      if (!t.is_number() || t.get<double>() < 0 || t.get<double>() >= 1)
        c.bad("'output_prob_thresh' must be a number in [0, 1), got ", describe_json(t));
      q.output_prob_thresh = t.get<float>();
    }
    have_prompt = true;
  } else if (type == "remove_object") {
    c.only({"obj_id", "frame_index", "is_user_action"});
    q.type = TrackRequest::Type::RemoveObject;
    if (!c.has("obj_id")) c.bad("no 'obj_id'");
    q.obj_id = c.integer("obj_id");
    if (q.obj_id < 0) c.bad("'obj_id' ", q.obj_id, " is negative");
    if (c.has("frame_index")) q.frame_index = c.frame("frame_index");
    if (!have_prompt) c.bad("no text prompt was added before it");
  } else if (type == "propagate_in_video") {
    c.only({"propagation_direction", "start_frame_index", "max_frame_num_to_track", "output_prob_thresh"});
    q.type = TrackRequest::Type::Propagate;
    if (c.has("propagation_direction")) {
      const json& d = r.at("propagation_direction");
      const std::string s = d.is_string() ? d.get<std::string>() : "";
      if (s == "forward")
        q.direction = PropagationDirection::Forward;
      else if (s == "backward")
        q.direction = PropagationDirection::Backward;
      else if (s == "both")
        q.direction = PropagationDirection::Both;
      else
        c.bad("'propagation_direction' must be \"forward\", \"backward\" or \"both\", got ", describe_json(d));
    }
    if (c.has("start_frame_index")) q.start_frame_index = c.frame("start_frame_index");
    if (c.has("max_frame_num_to_track")) {
      const int64_t m = c.integer("max_frame_num_to_track");
      if (m < 0) c.bad("'max_frame_num_to_track' ", m, " is negative");
      q.max_frame_num_to_track = int(std::min<int64_t>(m, num_frames));
    }
    if (!have_prompt) c.bad("no text prompt was added before it");
  } else if (type == "reset_session") {
    c.only({});
    q.type = TrackRequest::Type::ResetSession;
    have_prompt = false;
  } else {
    c.bad("unknown request type (expected add_prompt, remove_object, propagate_in_video or reset_session)");
  }
  return q;
}

}  // namespace

std::vector<TrackRequest> read_track_requests(const std::string& path, int num_frames) {
  const std::string what = "--requests " + path;
  json doc = parse_untrusted_json(read_untrusted_text_file(path, kMaxRequestsFileBytes), what);
  if (doc.is_object() && doc.contains("requests")) doc = doc.at("requests");
  if (!doc.is_array())
    fail(what, ": expected an array of requests (or {\"requests\": [...]}), got ", describe_json(doc));
  if (doc.empty()) fail(what, ": no requests");
  if (doc.size() > kMaxRequests) fail(what, ": ", doc.size(), " requests (at most ", kMaxRequests, ")");
  std::vector<TrackRequest> out;
  bool have_prompt = false;
  for (size_t i = 0; i < doc.size(); ++i) {
    try {
      out.push_back(parse_one(doc[i], i, num_frames, have_prompt));
    } catch (const Error& e) {
      fail(what, ": ", e.what());
    }
  }
  return out;
}

void run_track_requests(pipeline::ConceptSet& concepts, const std::vector<TrackRequest>& requests,
                        const std::function<void(const pipeline::FrameOutput&)>& emit) {
  for (const TrackRequest& q : requests) {
    try {
      switch (q.type) {
        case TrackRequest::Type::AddPrompt:
          emit(concepts.add_text_prompt(q.frame_index, q.text, q.output_prob_thresh));
          break;
        case TrackRequest::Type::RemoveObject:
          SEGMUX_CHECK(concepts.remove_object(q.obj_id), "no object ", q.obj_id,
                       " is tracked at this point (it was never created, or was removed)");
          break;
        case TrackRequest::Type::Propagate: {
          const int start = q.start_frame_index.value_or(-1);
          const int max_frames = q.max_frame_num_to_track.value_or(-1);
          auto sink = [&](pipeline::FrameOutput out) {
            emit(out);
            return true;
          };
          if (q.direction != PropagationDirection::Backward) concepts.propagate(start, max_frames, false, sink);
          if (q.direction != PropagationDirection::Forward) concepts.propagate(start, max_frames, true, sink);
          break;
        }
        case TrackRequest::Type::ResetSession:
          concepts.reset();
          break;
      }
    } catch (const Error& e) {
      fail(q.name, ": ", e.what());
    }
  }
}

}  // namespace segmux::apps
