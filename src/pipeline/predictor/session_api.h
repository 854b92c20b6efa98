// segmux video predictor: the user-facing session API (mirrors the official SAM 3.1 request API:
// start_session, add_prompt, propagate_in_video, remove_object, reset_session, close_session).
//
//   auto backend = ...;                              // a ModelBackend (compiled models, or replay)
//   segmux::pipeline::VideoPredictor predictor(*backend, segmux::pipeline::default_control_config());
//   std::string id = predictor.start_session(std::move(frame_source));
//   auto first = predictor.add_prompt(id, 0, segmux::pipeline::Prompt::from_text("person"));
//   predictor.propagate_in_video(id, {}, [](const segmux::pipeline::FrameOutput& out) {
//     // out.frame_index, out.obj_ids, out.probs, out.boxes_xywh (normalised), out.masks (video size)
//     return true;                                  // false stops the propagation
//   });
//   predictor.close_session(id);
//
// Frames come from a FrameSource (pipeline/frame_source.h: frame count, original size, frame i as RGB).
// Memory bound: backbone features of one frame at a time (the frame being processed) plus the text
// features; delayed outputs are held as RLE masks for at most hotstart_delay + postprocess_batch_size
// frames; tracker memories are kept per state by the backend (one entry per processed frame, as in the
// official predictor).
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/backends/backend.h"
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
  bool clear_old_points = true;   // false: the points add to the object's earlier points on that frame
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

class VideoPredictor {
 public:
  VideoPredictor(ModelBackend& backend, ControlConfig config);
  ~VideoPredictor();

  // Opens a session on a frame source; returns its id ("session_0", ...). One session runs at a time
  // per backend; starting another closes nothing but shares the backend, so run them one after another.
  std::string start_session(std::unique_ptr<FrameSource> frames);
  // A text prompt adds a concept (every concept of the session is tracked at once; a prompt repeating a
  // concept's text restarts that concept) and runs the prompted frame; returns that concept's outputs
  // there. Each output object carries its prompt (FrameOutput::prompts).
  FrameOutput add_prompt(const std::string& session_id, int frame_index, const Prompt& prompt);
  // Runs the frames and calls `on_frame` for each output (in processing order; hot-start delayed).
  // "Both" = forward from the start frame, then backward from it. on_frame returning false stops.
  void propagate_in_video(const std::string& session_id, const PropagateRequest& request,
                          const std::function<bool(const FrameOutput&)>& on_frame);
  // Removes an object (official remove_object; frame_index, when given, must be a frame of the video).
  // false: no object of that id was ever tracked in the session (an object hot start removed earlier
  // is still removed from the kept outputs, as officially).
  bool remove_object(const std::string& session_id, int64_t obj_id, std::optional<int> frame_index = std::nullopt);
  // The last outputs of a frame without removed objects, with current scores, the remaining objects
  // post-processed again (pixels a removed object held go back to the objects it overlapped): what the
  // official remove_object answers for its frame_index, and what a propagation that only fetches
  // yields. Needs keep_outputs(session, true) before the propagation (off by default: the kept RLE
  // masks grow with the video); nullopt for a frame not kept.
  std::optional<FrameOutput> frame_outputs(const std::string& session_id, int frame_index) const;
  void keep_outputs(const std::string& session_id, bool keep);
  // Stops a running propagate_in_video after the frame in progress (callable from another thread).
  void cancel_propagation(const std::string& session_id);
  void reset_session(const std::string& session_id);
  void close_session(const std::string& session_id);  // idempotent

  // The decisions taken so far in a session (for tools and tests).
  const std::vector<FrameDecisions>& decisions(const std::string& session_id) const;
  // false: a session keeps only its latest frame's decisions (bounded memory on long or live videos).
  void keep_decisions(const std::string& session_id, bool keep);

 private:
  struct Session {
    std::unique_ptr<FrameSource> frames;
    std::unique_ptr<ConceptSet> concepts;
  };
  Session& get(const std::string& id);
  const Session& get(const std::string& id) const;
  ModelBackend& backend_;
  ControlConfig config_;
  int next_id_ = 0;
  std::map<std::string, Session> sessions_;
};

}  // namespace segmux::pipeline
