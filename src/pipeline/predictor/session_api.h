// segmux video sessions: the one session type behind every front door (mirrors the official SAM 3.1
// request API: add_prompt, propagate_in_video, remove_object, reset_session; a session is closed by
// destroying it).
//
// Frames come from a FrameSource (pipeline/media/frame_source.h: frame count, original size, frame i as
// RGB). Memory bound: backbone features of the frames being processed plus the text features; delayed
// outputs are held as RLE masks for at most hotstart_delay + postprocess_batch_size frames; kept
// outputs (SessionOptions::keep_outputs) are RLE masks per frame; tracker memories are kept per state
// by the model session.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/backends/model.h"
#include "pipeline/media/frame_source.h"
#include "pipeline/predictor/concepts.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/control_plane.h"

namespace segmux::pipeline {

// A prompt, as the official SAM 3.1 add_prompt reads it: points (with obj_id) go to the tracker's
// interactive head for that object (a new object or a refinement); otherwise text and / or boxes are a
// semantic prompt for the detector (boxes: normalised xywh exemplars with labels; boxes alone are
// grounded with the official "<text placeholder>" text), and obj_id, if set, is not used (officially
// too). Points exclude text and boxes. segmux extension: `object_box` is the tracker's box for obj_id
// (box corners before any points), a prompt no official request can express.
struct Prompt {
  std::optional<std::string> text;
  std::vector<std::array<float, 4>> boxes_xywh;  // normalised [0, 1]: the detector's exemplars
  std::vector<int> box_labels;                   // 1 positive, 0 negative
  std::vector<std::array<float, 2>> points_xy;   // normalised [0, 1]
  std::vector<int> point_labels;
  std::optional<int64_t> obj_id;  // the object the points / object_box prompt (new or existing: a refinement)
  std::optional<std::array<float, 4>> object_box;  // extension: the tracker's box for obj_id (normalised xywh)
  // extension: obj_id's mask on the frame, pixels 0 / 1, any size (resized as the official tracker's
  // add_new_masks does; mask_prompts.h); excludes text, boxes and points.
  std::optional<BinaryMask> mask;
  bool clear_old_points = true;  // false: the points add to the object's earlier points on that frame
  // Objects of this prompt whose score is not above it are left out of the outputs (unset: none; the
  // official 3.1 predictor accepts it and shows every object).
  std::optional<float> output_prob_thresh;

  static Prompt from_text(std::string t) {
    Prompt p;
    p.text = std::move(t);
    return p;
  }
};

enum class PropagationDirection { Forward, Backward, Both };

struct PropagateRequest {
  PropagationDirection direction = PropagationDirection::Both;  // the official request default
  std::optional<int> start_frame_index;                         // default: the first prompted frame
  std::optional<int> max_frame_num_to_track;                    // default: all frames
};

// A prompt onto a session's concepts: the one conversion that the session API, request files, serve,
// the C API and Python share. Points (or the extension's object_box) go to the tracker for obj_id;
// anything else (text and / or boxes) is the detector's semantic prompt, obj_id unused (official
// add_prompt). Errors start with "add_prompt: ".
FrameOutput add_prompt_to_concepts(ConceptSet& concepts, int frame_index, const Prompt& prompt);

struct SessionOptions {
  // Keep every frame's outputs (RLE masks, a few KB a frame), as the official predictor does: a click
  // answers with the frame's other objects, a removal with the frame recomputed, a propagation after
  // removals fetches them instead of running the model. Off: memory does not grow with the video.
  bool keep_outputs = true;
  // Keep the decisions of every frame (tools and parity); off: only the latest frame's.
  bool keep_decisions = false;
  // > 0: live input (frames pushed while the video is tracked, e.g. a LiveFrameSource holding this many):
  // forward propagations continue one open run, and outputs are kept for the frames still held only.
  int live_frames_held = 0;
};

// One video's session: the API of every front door (`segmux track`, `segmux serve`, the C API, Python,
// video parity). It runs on a model session of its own (several sessions of one model never share
// state), so sessions may interleave their requests and each gets what it would get alone.
//
//   VideoSession s(*opened.model, frames, control_config_for(opened.config));
//   FrameOutput first = s.add_prompt(0, Prompt::from_text("person"));
//   s.propagate({}, [](const FrameOutput& out) { ...; return true; });   // false stops
//
// A text prompt adds a concept (every concept is tracked at once; a prompt repeating a concept's text
// restarts that concept only); points with obj_id add or refine one object. Not thread-safe, but
// cancel() may be called from another thread.
class VideoSession {
 public:
  using FrameSink = std::function<bool(const FrameOutput&)>;
  // Opens a model session of its own on `model`; `model` and `frames` must outlive the session.
  VideoSession(Model& model, FrameSource& frames, ControlConfig config, SessionOptions options = {});
  ~VideoSession();

  // Runs the prompted frame; returns its outputs (official add_prompt). A click answers with the frame's
  // kept outputs and the clicked object's new mask. Errors start with "add_prompt: "; a refused prompt
  // changes nothing.
  FrameOutput add_prompt(int frame_index, const Prompt& prompt);
  // Official propagate_in_video: outputs in processing order, hot-start delayed; Both = forward, then
  // backward. false: stopped by on_frame or cancel(). Live input, forward: the frames pushed since, in
  // one run kept open across calls (ConceptSet::propagate_open): outputs come as the hot-start rule
  // releases them, and the run ends (every held output delivered) when its range is tracked, after
  // end_stream(), or at a prompt or removal (then the next propagation delivers them first). After the
  // end of the stream and its run, the frames are a video like any other.
  bool propagate(const PropagateRequest& request, const FrameSink& on_frame);
  // Live input: no more frames come; the next forward propagation delivers every output still held.
  void end_stream();
  bool stream_ended() const { return stream_ended_; }
  // Official remove_object (frame_index, when given, must be a frame of the video). false: no object of
  // that id was ever tracked in the session.
  bool remove_object(int64_t obj_id, std::optional<int> frame_index = std::nullopt);
  // The last outputs of a frame without removed objects, post-processed again (the official
  // remove_object answer); nullopt for a frame not kept.
  std::optional<FrameOutput> frame_outputs(int frame_index) const;
  void cancel();  // stops a running propagation after the frame in progress (any thread)
  void reset();   // official reset_session: every prompt and object gone; the video stays

  int num_frames() const { return frames_.num_frames(); }
  FrameSource& frames() { return frames_; }
  const ConceptSet& concepts() const { return *concepts_; }
  std::vector<int64_t> object_ids() const { return concepts_->object_ids(); }
  // The first concept's decisions (SessionOptions::keep_decisions for all of them).
  const std::vector<FrameDecisions>& decisions() const { return concepts_->decisions(); }

 private:
  bool end_open_run(const FrameSink& on_frame);
  bool deliver_held(const FrameSink& on_frame);
  void trim_kept();

  FrameSource& frames_;
  SessionOptions options_;
  std::unique_ptr<ModelSession> model_session_;  // before concepts_: destroyed after them
  std::unique_ptr<ConceptSet> concepts_;
  std::vector<FrameOutput> held_;  // an open run's last outputs, ended by a prompt: for the next propagation
  bool stream_ended_ = false;
};

}  // namespace segmux::pipeline
