#include "service/official_request.h"

#include <cstdint>

#include "core/error.h"
#include "io/json_limits.h"
#include "pipeline/predictor/client_ids.h"
#include "service/mask_request.h"

namespace segmux::service {

namespace {

using nlohmann::json;
using pipeline::PropagationDirection;

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
    // Above 2^63 - 1 the value would read as a negative one (a huge frame_index was reported as -1).
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
      bad("'", key, "' ", v.get<uint64_t>(), " is out of range");
    return v.get<int64_t>();
  }
  int frame(const char* key) const {
    const int64_t f = integer(key);
    if (f < 0 || f >= num_frames)
      bad("'", key, "' ", f, " is out of range for a video of ", num_frames, " frames (0..", num_frames - 1, ")");
    return int(f);
  }
  void only(std::set<std::string> keys, const std::set<std::string>& extra) const {
    keys.insert("type");
    keys.insert(extra.begin(), extra.end());
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
    if (has("points") && !has("obj_id")) bad("points need an 'obj_id' (the object they create or refine)");
    // Officially boxes are always the detector's visual prompt, with their labels (obj_id or not).
    if (has("bounding_boxes") && !has("bounding_box_labels")) bad("'bounding_boxes' need 'bounding_box_labels'");
    if (has("bounding_box_labels") && !has("bounding_boxes")) bad("'bounding_box_labels' without 'bounding_boxes'");
    if (has("point_labels") && !has("points")) bad("'point_labels' without 'points'");
  }
  // The checked boxes (official add_prompt: bounding_boxes normalised x, y, w, h; labels 1 / 0).
  void boxes(OfficialRequest& q) const {
    if (!has("bounding_boxes")) return;
    for (const auto& item : r.at("bounding_boxes"))
      q.boxes_xywh.push_back({item[0].get<float>(), item[1].get<float>(), item[2].get<float>(), item[3].get<float>()});
    for (const auto& l : r.at("bounding_box_labels")) {
      if (!(l.is_boolean() || l.is_number_integer()) ||
          (l.is_number_integer() && l.get<int64_t>() != 0 && l.get<int64_t>() != 1))
        bad("'bounding_box_labels' entries must be 1 (positive) or 0 (negative), got ", describe_json(l));
      q.box_labels.push_back(l.is_boolean() ? int(l.get<bool>()) : int(l.get<int64_t>()));
    }
  }
  // A tracker prompt for obj_id: points with labels 0 / 1 (2 / 3: box corners), or the segmux extension
  // 'object_box' (the object's box as the tracker's two corner points; no official request has it).
  pipeline::Prompt tracker() const {
    pipeline::Prompt p;
    if (!has("obj_id"))
      bad("'", has("object_mask") ? "object_mask" : "object_box",
          "' needs an 'obj_id' (the object it creates or refines)");
    p.obj_id = integer("obj_id");
    pipeline::check_client_obj_id(*p.obj_id, where);
    if (has("text")) bad("points are for one object: 'text' is not allowed with them");
    if (has("bounding_boxes"))
      bad("points exclude 'bounding_boxes' (officially boxes always go to the detector; the tracker's box "
          "for one object is the extension 'object_box')");
    if (has("points")) {
      if (!has("point_labels")) bad("'points' need 'point_labels' (1 positive, 0 negative)");
      for (const auto& q : r.at("points")) p.points_xy.push_back({q[0].get<float>(), q[1].get<float>()});
      for (const auto& l : r.at("point_labels")) {
        if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() > 3)
          bad("'point_labels' entries must be 1 (positive), 0 (negative), 2 or 3 (box corners), got ",
              describe_json(l));
        p.point_labels.push_back(int(l.get<int64_t>()));
      }
    }
    if (has("object_box")) {
      const json& b = r.at("object_box");
      if (!b.is_array() || b.size() != 4) bad("'object_box' must be [x, y, w, h] (normalised)");
      for (const auto& x : b)
        if (!x.is_number() || x.get<double>() < 0 || x.get<double>() > 1)
          bad("'object_box' coordinates must be numbers in [0, 1] (normalised), got ", describe_json(x));
      if (!(b[2].get<double>() > 0 && b[3].get<double>() > 0)) bad("'object_box' is empty");
      if (b[0].get<double>() + b[2].get<double>() > 1 || b[1].get<double>() + b[3].get<double>() > 1)
        bad("'object_box' reaches outside the frame");
      p.object_box = std::array<float, 4>{b[0].get<float>(), b[1].get<float>(), b[2].get<float>(), b[3].get<float>()};
    }
    if (has("object_mask")) {  // segmux extension: the object's mask (service/mask_request.h)
      if (has("points") || has("object_box")) bad("'object_mask' excludes 'points' and 'object_box'");
      p.mask = parse_object_mask(r.at("object_mask"), where);
    }
    if (has("clear_old_points")) {
      if (!r.at("clear_old_points").is_boolean()) bad("'clear_old_points' must be true or false");
      p.clear_old_points = r.at("clear_old_points").get<bool>();
    }
    if (has("output_prob_thresh")) bad("'output_prob_thresh' applies to text prompts only");
    return p;
  }
};

}  // namespace

OfficialRequest parse_official_request(const json& r, const std::string& name, int num_frames, bool& have_prompt,
                                       const std::set<std::string>& extra_keys) {
  OfficialRequest q;
  q.name = name;
  if (!r.is_object()) fail(q.name, ": a request must be an object, got ", describe_json(r));
  if (!r.contains("type") || !r.at("type").is_string()) fail(q.name, ": no string 'type'");
  const std::string type = r.at("type").get<std::string>();
  q.name += " (" + type + ")";
  Checker c{r, q.name, num_frames};
  if (type == "add_prompt") {
    c.only({"frame_index", "text", "output_prob_thresh", "points", "point_labels", "bounding_boxes",
            "bounding_box_labels", "obj_id", "clear_old_points", "clear_old_boxes", "object_box", "object_mask"},
           extra_keys);
    q.type = OfficialRequest::Type::AddPrompt;
    if (!c.has("frame_index")) c.bad("no 'frame_index'");
    q.frame_index = c.frame("frame_index");
    c.geometry();
    if (c.has("points") || c.has("object_box") || c.has("object_mask")) {  // the tracker's prompt for one object
      q.tracker = c.tracker();
      q.obj_id = *q.tracker->obj_id;
      have_prompt = true;
      return q;
    }
    // Official add_prompt without points: a semantic prompt for the detector (it starts the concept
    // over); obj_id is not used there, only checked to be an id.
    if (c.has("obj_id")) c.integer("obj_id");
    for (const char* key : {"clear_old_points", "clear_old_boxes"})
      if (c.has(key) && !(r.at(key).is_boolean() && r.at(key).get<bool>()))
        c.bad("'", key, "' must be true for a text / box prompt (the official predictor asserts it)");
    c.boxes(q);  // box exemplars for the detector
    if (c.has("text") || q.boxes_xywh.empty()) {
      if (!c.has("text") || !r.at("text").is_string() || r.at("text").get<std::string>().empty())
        c.bad("'text' must be a non-empty string (or give 'bounding_boxes')");
      q.text = r.at("text").get<std::string>();
    }
    if (c.has("output_prob_thresh")) {
      const json& t = r.at("output_prob_thresh");
      if (!t.is_number() || t.get<double>() < 0 || t.get<double>() >= 1)
        c.bad("'output_prob_thresh' must be a number in [0, 1), got ", describe_json(t));
      q.output_prob_thresh = t.get<float>();
    }
    have_prompt = true;
  } else if (type == "remove_object") {
    c.only({"obj_id", "frame_index", "is_user_action"}, extra_keys);
    q.type = OfficialRequest::Type::RemoveObject;
    if (!c.has("obj_id")) c.bad("no 'obj_id'");
    q.obj_id = c.integer("obj_id");
    pipeline::check_client_obj_id(q.obj_id, c.where);
    if (c.has("frame_index")) q.remove_frame_index = q.frame_index = c.frame("frame_index");
    if (!have_prompt) c.bad("no prompt (text or points) was added before it");
  } else if (type == "propagate_in_video") {
    c.only({"propagation_direction", "start_frame_index", "max_frame_num_to_track", "output_prob_thresh"}, extra_keys);
    q.type = OfficialRequest::Type::Propagate;
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
    if (!have_prompt) c.bad("no prompt (text or points) was added before it");
  } else if (type == "reset_session") {
    c.only({}, extra_keys);
    q.type = OfficialRequest::Type::ResetSession;
    have_prompt = false;
  } else {
    c.bad("unknown request type (expected add_prompt, remove_object, propagate_in_video or reset_session)");
  }
  return q;
}

bool run_official_request(pipeline::VideoSession& session, const OfficialRequest& q,
                          const std::function<bool(const pipeline::FrameOutput&)>& emit) {
  try {
    switch (q.type) {
      case OfficialRequest::Type::AddPrompt: {
        if (q.tracker) {
          emit(session.add_prompt(q.frame_index, *q.tracker));
          return true;
        }
        pipeline::Prompt p;
        if (!q.text.empty()) p.text = q.text;
        p.boxes_xywh = q.boxes_xywh;
        p.box_labels = q.box_labels;
        p.output_prob_thresh = q.output_prob_thresh;
        emit(session.add_prompt(q.frame_index, p));
        return true;
      }
      case OfficialRequest::Type::RemoveObject:
        SEGMUX_CHECK(session.remove_object(q.obj_id), "no object ", q.obj_id,
                     " is tracked at this point (it was never created, or was removed)");
        return true;
      case OfficialRequest::Type::Propagate:
        return session.propagate({q.direction, q.start_frame_index, q.max_frame_num_to_track}, emit);
      case OfficialRequest::Type::ResetSession:
        session.reset();
        return true;
    }
  } catch (const Error& e) {
    fail(q.name, ": ", e.what());
  }
  return true;
}

}  // namespace segmux::service
