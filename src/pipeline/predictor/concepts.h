// Several text concepts tracked at once in one video ("--prompt dog --prompt cat"): one
// VideoControlPlane per concept, all on the video's model session. The backbone runs once per frame for
// all of them (the concepts take turns on each frame and share the session's frame features), each
// concept keeps its own text, tracker states (ids unique in the session) and hot-start / confirmation
// bookkeeping, and object ids are unique across concepts (one shared counter). Every output object carries the prompt
// that found it.
//
// The official SAM 3.1 predictor resets the session on a new text prompt; Hugging Face keeps a
// prompt -> ids map; here every concept is kept until reset() (a text prompt for a concept already
// present restarts that concept only). A single concept runs exactly as a VideoControlPlane alone.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/backends/model.h"
#include "pipeline/media/frame_source.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/control_plane.h"

namespace segmux::pipeline {

// One entry of the official interactive predictor's action history (sam3_multiplex_tracking.py
// add_action_history): user actions and the propagations that ran.
struct PropagationAction {
  enum class Type { Add, Refine, Remove, Full, Partial, Fetch, Cancel } type = Type::Full;
  std::optional<int> frame_index;  // a propagation's start_frame_index as requested (unset: not given)
  std::vector<int64_t> obj_ids;    // Add / Refine: the object; Partial: the objects it tracks
};

// The propagation the official parse_action_history_for_propagation picks after `history` (Full,
// Partial with `obj_ids` set to the objects to track, or Fetch). Cancel as the last action repeats the
// propagation before it; a propagation right after another, or one that started at the first / last
// frame, is followed by a fetch; otherwise the next one repeats it. After user actions: Partial for the
// objects added or refined since the last propagation, Fetch when there are none (removals only).
PropagationAction::Type plan_propagation(const std::vector<PropagationAction>& history, int num_frames,
                                         std::vector<int64_t>& obj_ids);

class ConceptSet {
 public:
  ConceptSet(ModelSession& model, FrameSource& frames, ControlConfig config);
  ~ConceptSet();

  // Adds the concept `text` prompted on `frame_index` (or restarts it if present) and returns its
  // outputs on that frame (nothing hidden, as the official add_prompt). output_prob_thresh: objects
  // of this concept whose score is not above it are left out of every output (unset: none).
  // Box exemplars join the text on that frame's detection (the prompt's concept is its text).
  FrameOutput add_text_prompt(int frame_index, const std::string& text,
                              std::optional<float> output_prob_thresh = std::nullopt,
                              const std::vector<sam31::BoxExemplar>& boxes = {});

  // A point / box prompt for one object (official add_prompt with points, model-input pixels): refines
  // the object in the concept holding it, else adds it as a new object (to the first concept, or to a
  // concept without text when there is none: points only). Returns the frame's outputs: the kept
  // outputs of that frame (keep_outputs) with the object's new mask, else the object alone.
  FrameOutput add_point_prompt(int frame_index, int64_t obj_id, const PointInputs& points, bool clear_old_points);
  // A mask prompt for one object (segmux extension, mask_prompts.h), otherwise as add_point_prompt:
  // the mask at input_mask_size (f32 [1, Hi, Wi]) and at the video size.
  FrameOutput add_mask_prompt(int frame_index, int64_t obj_id, const Tensor& input_mask, const BinaryMask& video_mask);

  // A propagation, of the kind the official action history picks (plan_propagation): full, every
  // concept over the same frames (VideoControlPlane::propagate), `sink` getting one merged output per
  // frame (objects by ascending id); partial after point prompts, the tracker alone for the prompted
  // objects merged into the kept outputs (no detector, no new objects); fetch (after removals only, or
  // a propagation repeated), the kept outputs post-processed again, nothing run. Partial and fetch need
  // kept outputs (keep_outputs) of a full propagation, for every frame of the range in a fetch; without
  // them a full propagation runs (the official raises KeyError there). start_frame < 0: not given.
  // Returns false if stopped by the sink or cancel().
  bool propagate(int start_frame, int max_frames, bool reverse, const std::function<bool(FrameOutput)>& sink);
  // Live input (frames arrive while the video is tracked): one forward full propagation kept open
  // across calls. propagate_open() tracks the frames from start_frame (< 0: the open run's start, else
  // the first prompted frame) to start_frame + max_frames (< 0: no end) that are there and not yet
  // tracked, continuing the open run of that start (a run open from another start ends first). Outputs
  // reach `sink` as the hot-start rule releases them, exactly as one propagation over the same frames
  // delivers them; the run ends (every held output delivered) when its range is tracked, or by
  // close_open_run() (the end of the stream). Return false if stopped by the sink or cancel().
  bool propagate_open(int start_frame, int max_frames, const std::function<bool(FrameOutput)>& sink);
  bool close_open_run(const std::function<bool(FrameOutput)>& sink);
  bool has_open_run() const { return open_ != nullptr; }
  // Forgets the kept outputs of frames before `frame` (live input: frames no longer held).
  void forget_kept_before(int frame);
  // Stops a running propagate() after the frame in progress (callable from another thread).
  void cancel() { cancel_ = true; }

  // From whichever concept holds it, and from the kept outputs. false: no concept tracks it and no kept
  // frame shows it (an object hot start removed earlier is still removed from the kept frames, as
  // officially).
  bool remove_object(int64_t obj_id);

  // Keeps every frame's propagation outputs (RLE masks) for frame_outputs(): the official predictor's
  // cached frame outputs, which its remove_object answers with. Off by default (memory grows with the
  // video).
  void keep_outputs(bool keep) { keep_outputs_ = keep; }
  // The last outputs of a frame, without removed objects, with current scores, post-processed again
  // from the objects' masks before the non-overlap step (official fetch_and_process_single_frame_results:
  // the remove_object response, a fetching propagation); nullopt if the frame was not kept.
  std::optional<FrameOutput> frame_outputs(int frame_index) const;
  void reset();  // forgets every concept; ids start at 0 again

  bool empty() const { return concepts_.empty(); }
  int image_size() const { return model_.geometry().image_size; }  // model input (point coordinates)
  int num_frames() const { return frames_.num_frames(); }
  int video_height() const { return frames_.height(); }
  int video_width() const { return frames_.width(); }
  int input_mask_size() const { return model_.geometry().input_mask_size; }  // the tracker's mask inputs
  std::vector<std::string> prompts() const;
  std::vector<int64_t> object_ids() const;  // every concept's, ascending
  // The concept holding `obj_id`, if any.
  std::optional<std::string> prompt_of(int64_t obj_id) const;
  // The first concept's decisions (tools and tests of single-concept runs).
  const std::vector<FrameDecisions>& decisions() const;
  // false: every concept keeps only its latest frame's decisions (bounded memory on long videos).
  void keep_decisions(bool keep);

  // One frame's outputs of several concepts as one (objects by ascending id, stats summed).
  static FrameOutput merge(std::vector<FrameOutput> parts);

 private:
  struct Concept;
  FrameOutput labelled(const Concept& c, FrameOutput out) const;
  // A user's prompt for one object (points or a mask: `run` calls the control plane of its concept).
  FrameOutput add_object_prompt(int frame_index, int64_t obj_id,
                                const std::function<VideoControlPlane::PointResult(VideoControlPlane&)>& run);
  Concept& concept_for(const std::string& text);  // the concept of `text`, created if absent

  struct KeptFrame {  // keep_outputs(): a frame's merged outputs
    std::vector<int64_t> obj_ids;
    std::vector<float> probs;
    std::vector<std::array<float, 4>> boxes_xywh;
    std::vector<RleMask> masks;
    std::vector<std::string> prompts;
    FrameStats stats;
    std::vector<float> overlap_probs;        // FrameOutput::overlap_probs (empty if unknown)
    std::vector<RleMask> pre_overlap_masks;  // FrameOutput::pre_overlap_masks (empty if unknown)
  };
  using FrameSink = std::function<bool(FrameOutput)>;
  class MergedRun;
  void keep(const FrameOutput& merged);  // into kept_
  int first_prompted_frame() const;      // -1: no concept
  std::unique_ptr<MergedRun> open_;      // propagate_open()'s run
  int open_start_ = 0, open_next_ = 0;   // the open run's start (as asked) and next frame
  bool open_stopped_ = false;            // the sink stopped the open run
  bool keep_outputs_ = false;
  std::map<int, KeptFrame> kept_;
  // The official action history: what the next propagation does (plan_propagation).
  std::vector<PropagationAction> history_;
  bool propagated_ = false;  // a full propagation has run since the last text prompt (its outputs are kept)
  std::vector<int> processing_order(int start_frame, int max_frames, bool reverse) const;
  bool propagate_full(int start_frame, int max_frames, bool reverse, const std::function<bool(FrameOutput)>& sink);
  // Official propagation_partial: the tracker for the added / refined objects `ids` only, merged into
  // the kept outputs of the frames.
  bool propagate_partial(const std::vector<int>& order, const std::set<int64_t>& ids, bool reverse,
                         const std::function<bool(FrameOutput)>& sink);
  // Official propagation_fetch: the kept outputs of the frames (frame_outputs), nothing run.
  bool propagate_fetch(const std::vector<int>& order, const std::function<bool(FrameOutput)>& sink);

  ModelSession& model_;
  FrameSource& frames_;
  ControlConfig cfg_;
  std::unique_ptr<FrameSource> cached_frames_;
  std::shared_ptr<int64_t> max_id_;
  std::vector<std::unique_ptr<Concept>> concepts_;
  std::atomic<bool> cancel_{false};
  bool keep_decisions_ = true;
};

}  // namespace segmux::pipeline
