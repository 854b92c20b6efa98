#include "pipeline/predictor/session_api.h"

#include "core/error.h"
#include "io/printable.h"
#include "pipeline/predictor/box_prompts.h"
#include "pipeline/predictor/client_ids.h"
#include "pipeline/predictor/mask_prompts.h"
#include "pipeline/predictor/prompt_points.h"

namespace segmux::pipeline {

VideoPredictor::VideoPredictor(ModelBackend& backend, ControlConfig config) : backend_(backend), config_(config) {}
VideoPredictor::~VideoPredictor() = default;

VideoPredictor::Session& VideoPredictor::get(const std::string& id) {
  auto it = sessions_.find(id);
  SEGMUX_CHECK(it != sessions_.end(), "no session '", id, "' (closed or never started)");
  return it->second;
}
const VideoPredictor::Session& VideoPredictor::get(const std::string& id) const {
  auto it = sessions_.find(id);
  SEGMUX_CHECK(it != sessions_.end(), "no session '", id, "' (closed or never started)");
  return it->second;
}

std::string VideoPredictor::start_session(std::unique_ptr<FrameSource> frames) {
  SEGMUX_CHECK(frames != nullptr, "start_session: no frame source");
  SEGMUX_CHECK(frames->num_frames() > 0, "start_session: the video has no frames");
  std::string id = "session_" + std::to_string(next_id_++);
  Session s;
  s.frames = std::move(frames);
  s.concepts = std::make_unique<ConceptSet>(backend_, *s.frames, config_);
  sessions_.emplace(id, std::move(s));
  return id;
}

namespace {

// Everything the control plane would refuse only after it changed the session (a new concept is made
// before its text is tokenized): checked first, so a refused request changes nothing.
void check_prompt_first(const Prompt& prompt, int frame_index, int num_frames) {
  SEGMUX_CHECK(frame_index >= 0 && frame_index < num_frames, "add_prompt: frame_index ", frame_index,
               " is out of range for a video of ", num_frames, " frames (0..", num_frames - 1, ")");
  if (prompt.obj_id) check_client_obj_id(*prompt.obj_id, "add_prompt");
  SEGMUX_CHECK(!prompt.text || is_valid_utf8(*prompt.text), "add_prompt: the text \"", printable(*prompt.text, 80),
               "\" is not valid UTF-8");
}

}  // namespace

FrameOutput add_prompt_to_concepts(ConceptSet& concepts, int frame_index, const Prompt& prompt) {
  check_prompt_first(prompt, frame_index, concepts.num_frames());
  if (is_mask_prompt(prompt)) {
    const MaskInputs in =
        tracker_mask_inputs(prompt, concepts.video_height(), concepts.video_width(), concepts.input_mask_size());
    return concepts.add_mask_prompt(frame_index, *prompt.obj_id, in.input_mask, in.video_mask);
  }
  if (is_tracker_prompt(prompt))
    return concepts.add_point_prompt(frame_index, *prompt.obj_id, tracker_point_inputs(prompt, concepts.image_size()),
                                     prompt.clear_old_points);
  // Text and / or box exemplars for the detector; an obj_id is not used (the official add_prompt passes
  // it to the tracker only with points).
  SEGMUX_CHECK(prompt.point_labels.empty(), "add_prompt: 'point_labels' without 'points'");
  SEGMUX_CHECK(prompt.clear_old_points,
               "add_prompt: clear_old_points=false needs points (official: a text or box "
               "prompt must clear old points)");
  const std::vector<sam31::BoxExemplar> boxes = prompt_box_exemplars(prompt);
  const bool has_text = prompt.text.has_value() && !prompt.text->empty();
  SEGMUX_CHECK(has_text || !boxes.empty(), "add_prompt: the prompt has neither text nor boxes");
  return concepts.add_text_prompt(frame_index, has_text ? *prompt.text : std::string(kBoxOnlyText),
                                  prompt.output_prob_thresh, boxes);
}

FrameOutput VideoPredictor::add_prompt(const std::string& id, int frame_index, const Prompt& prompt) {
  return add_prompt_to_concepts(*get(id).concepts, frame_index, prompt);
}

void VideoPredictor::propagate_in_video(const std::string& id, const PropagateRequest& req,
                                        const std::function<bool(const FrameOutput&)>& on_frame) {
  Session& s = get(id);
  const int start = req.start_frame_index.value_or(-1);
  const int max_frames = req.max_frame_num_to_track.value_or(-1);
  SEGMUX_CHECK(!req.max_frame_num_to_track || *req.max_frame_num_to_track >= 0,
               "propagate_in_video: max_frame_num_to_track must be >= 0");
  bool stopped = false;
  auto sink = [&](FrameOutput out) {
    if (!on_frame(out)) stopped = true;
    return !stopped;
  };
  if (req.direction != PropagationDirection::Backward && !s.concepts->propagate(start, max_frames, false, sink)) return;
  if (!stopped && req.direction != PropagationDirection::Forward) s.concepts->propagate(start, max_frames, true, sink);
}

bool VideoPredictor::remove_object(const std::string& id, int64_t obj_id, std::optional<int> frame_index) {
  Session& s = get(id);
  check_client_obj_id(obj_id, "remove_object");
  SEGMUX_CHECK(!frame_index || (*frame_index >= 0 && *frame_index < s.frames->num_frames()), "remove_object: frame ",
               frame_index.value_or(0), " is out of range for a video of ", s.frames->num_frames(), " frames");
  return s.concepts->remove_object(obj_id);
}

std::optional<FrameOutput> VideoPredictor::frame_outputs(const std::string& id, int frame_index) const {
  return get(id).concepts->frame_outputs(frame_index);
}

void VideoPredictor::keep_outputs(const std::string& id, bool keep) { get(id).concepts->keep_outputs(keep); }

void VideoPredictor::cancel_propagation(const std::string& id) { get(id).concepts->cancel(); }

void VideoPredictor::reset_session(const std::string& id) { get(id).concepts->reset(); }

void VideoPredictor::close_session(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  it->second.concepts->reset();
  sessions_.erase(it);
}

void VideoPredictor::keep_decisions(const std::string& id, bool keep) { get(id).concepts->keep_decisions(keep); }

const std::vector<FrameDecisions>& VideoPredictor::decisions(const std::string& id) const {
  return get(id).concepts->decisions();
}

}  // namespace segmux::pipeline
