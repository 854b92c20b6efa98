// `segmux track --requests FILE.json`: a list of official-style requests (the SAM 3.1 predictor's
// handle_request / handle_stream_request), run in order on the input video:
//   {"type": "add_prompt", "frame_index": 0, "text"?: "dog", "bounding_boxes"?: [[x, y, w, h]],
//    "bounding_box_labels"?: [1], "output_prob_thresh"?: 0.5}
//   {"type": "remove_object", "obj_id": 2, "frame_index"?: 5}
//   {"type": "propagate_in_video", "propagation_direction"?: "both", "start_frame_index"?: 0,
//    "max_frame_num_to_track"?: 10}
//   {"type": "reset_session"}
// The file is a JSON array of requests or {"requests": [...]}; "session_id" keys are ignored. The whole
// file is checked before anything runs; an error names the request (index and type). Boxes without
// obj_id are the detector's exemplars (normalised [0, 1] as officially); add_prompt with obj_id takes
// points / one box for that object instead (service/official_request.h).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/predictor/concepts.h"
#include "pipeline/predictor/session_api.h"
#include "service/official_request.h"

namespace segmux::apps {

// The request checks and the mapping onto the session API are the service layer's (shared with serve).
using TrackRequest = service::OfficialRequest;

// Reads and checks every request against a video of num_frames frames.
std::vector<TrackRequest> read_track_requests(const std::string& path, int num_frames);

// Runs the requests on `session`; every add_prompt and propagation output goes to `emit` (a frame
// output later in the run replaces an earlier one of the same frame). Errors name the request.
void run_track_requests(pipeline::VideoSession& session, const std::vector<TrackRequest>& requests,
                        const std::function<void(const pipeline::FrameOutput&)>& emit);

}  // namespace segmux::apps
