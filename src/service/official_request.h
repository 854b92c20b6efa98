// One official SAM 3.1 request (the predictor's handle_request / handle_stream_request) checked and
// mapped onto the session API: shared by `segmux track --requests` (apps/track_requests.h) and
// `segmux serve` (service.h), so that both read the same fields with the same errors.
//   {"type": "add_prompt", "frame_index": 0, "text"?: "dog", "bounding_boxes"?: [[x, y, w, h]],
//    "bounding_box_labels"?: [1], "output_prob_thresh"?: 0.5}   (text and/or boxes: detector exemplars)
//   {"type": "remove_object", "obj_id": 2, "frame_index"?: 5}
//   {"type": "propagate_in_video", "propagation_direction"?: "both", "start_frame_index"?: 0,
//    "max_frame_num_to_track"?: 10}
//   {"type": "reset_session"}
//   {"type": "add_prompt", "frame_index": 6, "obj_id": 2, "points": [[0.61, 0.37]], "point_labels": [1],
//    "clear_old_points"?: true}   (tracker prompt for one object)
// Points and boxes are normalised [0, 1] as officially; point labels 1 positive, 0 negative (2 / 3 box
// corners). As officially, only points go to the tracker: bounding_boxes (labels 1 / 0) are always the
// detector's exemplars, with or without obj_id (obj_id is then unused), and exclude points.
// segmux extension (never in an official request): {"type": "add_prompt", "frame_index": 6, "obj_id": 2,
// "object_box": [x, y, w, h], "points"?: ...} gives the tracker one object's box (corner points);
// {"type": "add_prompt", "frame_index": 6, "obj_id": 2, "object_mask": {"size": [H, W], "counts": [...]}}
// one object's mask (mask_request.h).
#pragma once
#include <array>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/predictor/concepts.h"
#include "pipeline/predictor/session_api.h"

namespace segmux::service {

struct OfficialRequest {
  enum class Type { AddPrompt, RemoveObject, Propagate, ResetSession } type = Type::AddPrompt;
  std::string name;  // "request 3 (remove_object)" for messages
  int frame_index = 0;
  std::optional<int> remove_frame_index;         // remove_object's optional frame_index
  std::string text;                              // empty: boxes alone
  std::vector<std::array<float, 4>> boxes_xywh;  // add_prompt bounding_boxes (normalised), checked
  std::vector<int> box_labels;                   // 1 positive, 0 negative
  std::optional<float> output_prob_thresh;
  int64_t obj_id = -1;
  pipeline::PropagationDirection direction = pipeline::PropagationDirection::Both;
  std::optional<int> start_frame_index;
  std::optional<int> max_frame_num_to_track;
  std::optional<pipeline::Prompt> tracker;  // add_prompt with points (or the extension's object_box)
};

// Checks one request against a video of num_frames frames. `name` prefixes every error ("request 3");
// the type is appended. have_prompt: whether a text prompt precedes it (updated: add_prompt sets it,
// reset_session clears it). extra_keys: fields also accepted (e.g. "session_id"). Throws segmux::Error.
OfficialRequest parse_official_request(const nlohmann::json& r, const std::string& name, int num_frames,
                                       bool& have_prompt, const std::set<std::string>& extra_keys = {"session_id"});

// Runs one request on `session`; add_prompt and propagation outputs go to `emit` (false stops a
// propagation). Returns false when a propagation was stopped (by emit or a cancel). Errors name it.
bool run_official_request(pipeline::VideoSession& session, const OfficialRequest& q,
                          const std::function<bool(const pipeline::FrameOutput&)>& emit);

}  // namespace segmux::service
