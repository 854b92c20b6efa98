#include "pipeline/predictor/session_api.h"

#include "core/error.h"
#include "io/printable.h"
#include "pipeline/predictor/box_prompts.h"
#include "pipeline/predictor/client_ids.h"
#include "pipeline/predictor/mask_prompts.h"
#include "pipeline/predictor/prompt_points.h"

namespace segmux::pipeline {

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

VideoSession::VideoSession(Model& model, FrameSource& frames, ControlConfig config, SessionOptions options)
    : frames_(frames),
      options_(options),
      model_session_(model.new_session()),
      concepts_(std::make_unique<ConceptSet>(*model_session_, frames, config)) {
  SEGMUX_CHECK(frames.num_frames() > 0, "the video has no frames");
  validate_control_config(config, "the session's control settings");
  concepts_->keep_outputs(options.keep_outputs);
  concepts_->keep_decisions(options.keep_decisions);
}

VideoSession::~VideoSession() = default;

// A prompt, a removal or a backward run changes what an open live run would track: it ends there,
// its last outputs held for the next propagation.
bool VideoSession::end_open_run(const FrameSink& on_frame) {
  if (!concepts_->has_open_run()) return true;
  return concepts_->close_open_run([&](FrameOutput out) { return on_frame(out); });
}

bool VideoSession::deliver_held(const FrameSink& on_frame) {
  std::vector<FrameOutput> held = std::move(held_);
  held_.clear();
  for (auto& out : held)
    if (!on_frame(out)) return false;
  return true;
}

FrameOutput VideoSession::add_prompt(int frame_index, const Prompt& prompt) {
  end_open_run([&](const FrameOutput& out) {
    held_.push_back(out);
    return true;
  });
  FrameOutput out = add_prompt_to_concepts(*concepts_, frame_index, prompt);
  trim_kept();
  return out;
}

bool VideoSession::propagate(const PropagateRequest& req, const FrameSink& on_frame) {
  SEGMUX_CHECK(!req.max_frame_num_to_track || *req.max_frame_num_to_track >= 0,
               "propagate_in_video: max_frame_num_to_track must be >= 0");
  const int start = req.start_frame_index.value_or(-1);
  const int max_frames = req.max_frame_num_to_track.value_or(-1);
  SEGMUX_CHECK(start < num_frames(), "propagate_in_video: start frame ", start, " is out of range for a video of ",
               num_frames(), " frames");
  if (!deliver_held(on_frame)) return false;
  auto sink = [&](FrameOutput out) { return on_frame(out); };
  const bool streaming = options_.live_frames_held > 0 && (!stream_ended_ || concepts_->has_open_run());
  if (streaming && req.direction == PropagationDirection::Forward) {
    // Live: the frames pushed since, in the open run of that start; all held outputs once the stream
    // ended. After the stream's end, the frames are a video like any other.
    bool going = concepts_->propagate_open(start, max_frames, sink);
    if (going && stream_ended_) going = end_open_run(on_frame);
    trim_kept();
    return going;
  }
  if (!end_open_run(on_frame)) return false;
  if (req.direction != PropagationDirection::Backward && !concepts_->propagate(start, max_frames, false, sink))
    return false;
  if (req.direction != PropagationDirection::Forward && !concepts_->propagate(start, max_frames, true, sink))
    return false;
  return true;
}

bool VideoSession::remove_object(int64_t obj_id, std::optional<int> frame_index) {
  check_client_obj_id(obj_id, "remove_object");
  SEGMUX_CHECK(!frame_index || (*frame_index >= 0 && *frame_index < num_frames()), "remove_object: frame ",
               frame_index.value_or(0), " is out of range for a video of ", num_frames(), " frames");
  end_open_run([&](const FrameOutput& out) {
    held_.push_back(out);
    return true;
  });
  return concepts_->remove_object(obj_id);
}

std::optional<FrameOutput> VideoSession::frame_outputs(int frame_index) const {
  return concepts_->frame_outputs(frame_index);
}

void VideoSession::cancel() { concepts_->cancel(); }

void VideoSession::end_stream() {
  SEGMUX_CHECK(options_.live_frames_held > 0, "end_stream: not a live session");
  stream_ended_ = true;
}

void VideoSession::reset() {
  held_.clear();
  concepts_->reset();
}

// Live input keeps outputs only for the frames still held (a prompt can name no other).
void VideoSession::trim_kept() {
  if (options_.live_frames_held > 0) concepts_->forget_kept_before(num_frames() - options_.live_frames_held);
}

}  // namespace segmux::pipeline
