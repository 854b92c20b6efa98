// The SAM 3.1 multiplex video predictor's control plane (official Sam3MultiplexBase /
// Sam3MultiplexTracking of commit 9f22cb9, re-implemented from its behaviour): per frame it detects,
// propagates the tracker states, associates detections with tracks, applies hot start, reconditioning,
// occlusion and area-shrinkage suppression, encodes memories, adds/removes objects in multiplex
// buckets and builds outputs; across frames it delays outputs (hot start), applies masklet
// confirmation and post-processes them. All model work goes through the video's ModelSession.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/backends/model.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/frame_source.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/multiplex.h"

namespace segmux::pipeline {

struct FrameStats {
  int num_obj_tracked = 0;
  int num_obj_dropped = 0;
};

// The per-frame output of the request API (official _postprocess_output), objects by ascending id.
struct FrameOutput {
  int frame_index = 0;
  std::vector<int64_t> obj_ids;
  std::vector<float> probs;                      // detection score that created the object (-10000 if removed)
  std::vector<std::array<float, 4>> boxes_xywh;  // from the mask before non-overlap, normalised
  std::vector<BinaryMask> masks;                 // video resolution, after the object-wise non-overlap
  FrameStats stats;
  std::vector<std::string> prompts;  // per object: the text prompt that found it (ConceptSet fills it)
  // Per object: the probability the object-wise non-overlap ranked it by (official
  // obj_id_to_sam2_score of the frame); empty where not known. A later interactive propagation ranks
  // the objects it keeps by it.
  std::vector<float> overlap_probs;
  // Per object: its mask before the non-overlap step (official cached_frame_outputs), which the
  // interactive propagation re-ranks; empty where not known.
  std::vector<RleMask> pre_overlap_masks;
};

struct TrackerStateSnapshot {
  std::vector<int64_t> obj_ids;
  std::vector<std::vector<int>> assignments;
};

// Position-indexed hot-start / confirmation metadata after a frame (official gpu_metadata).
struct HotstartMetadata {
  std::vector<int64_t> obj_first_frame;
  std::vector<int64_t> consecutive_unmatch_count;
  std::vector<int64_t> trk_keep_alive;
  std::vector<int64_t> last_occluded;
  std::vector<int64_t> overlap_pair_counts;  // N x N row-major
  std::vector<int> confirmation_status;
  std::vector<int64_t> consecutive_det_num;
};

// Which API call processes a frame.
enum class FramePhase { AddPrompt, Propagate };
// As trace.json spells it: "add_prompt" / "propagate".
const char* phase_name(FramePhase phase);

// Everything decided on one processed frame (mirrors trace.json "frames" entries).
struct FrameDecisions {
  std::string phase;  // phase_name(): "add_prompt" or "propagate"
  int frame_index = 0;
  std::vector<int64_t> tracker_obj_ids_before;
  std::vector<int> det_kept_queries;  // query indices kept after NMS / boundary suppression, ascending
  std::vector<int> det_order;         // permutation applied to detections (kept first)
  std::vector<int> new_det_fa_inds;   // indices into the reordered detections
  std::vector<int64_t> new_det_obj_ids;
  std::vector<int64_t> unmatched_trk_obj_ids;
  std::map<int, std::vector<int64_t>> det_to_matched_trk_obj_ids;
  std::vector<int64_t> obj_ids_newly_removed;  // ascending
  int num_obj_dropped_due_to_limit = 0;
  std::map<int64_t, int> trk_id_to_max_iou_high_conf_det;
  std::vector<int64_t> reconditioned_obj_ids;          // ascending
  std::vector<int64_t> keep_alive_suppressed_obj_ids;  // computed as officially, not applied by default
  std::vector<int64_t> occlusion_suppressed_obj_ids;
  std::vector<int64_t> obj_ids_after;
  std::map<int64_t, float> obj_id_to_score;
  std::vector<int> masklet_confirmation_status;  // per obj_ids_after: 1 unconfirmed, 2 confirmed
  FrameStats stats;
  int64_t max_obj_id = -1;
  std::vector<TrackerStateSnapshot> tracker_states;
  std::vector<int64_t> build_outputs_obj_ids;
  std::map<int64_t, RleMask> build_outputs_masks;  // video resolution, before post-processing
  MaskStack memory_update_low_res_masks;           // tracker masks fed to memory encoding (low res)
  HotstartMetadata metadata_after;                 // hot-start / confirmation metadata after the frame
};

struct FrameWork;  // one frame in the making (control_plane_frame.h)

class VideoControlPlane {
 public:
  // `model`: the video's session (shared with the other concepts of the video: state ids come from it).
  VideoControlPlane(ModelSession& model, FrameSource& frames, ControlConfig config);

  // Text prompt on a frame (official add_prompt): resets the session state, encodes the text batch
  // [text, "visual", "geometric"], runs one frame and returns its outputs (nothing hidden). Box
  // exemplars (official bounding_boxes) join the text on that frame's detection only.
  FrameOutput add_text_prompt(int frame_index, const std::string& text,
                              const std::vector<sam31::BoxExemplar>& boxes = {});

  // Runs frames in order (official propagate_in_video): reverse starts at start_frame - 1. Outputs are
  // delivered through `sink` in frame order of processing, hotstart_delay frames late and in batches
  // of postprocess_batch_size, flushed at the end. start_frame < 0 = first prompted frame;
  // max_frames < 0 = all. `sink` returning false stops after the current batch.
  void propagate(int start_frame, int max_frames, bool reverse, const std::function<bool(FrameOutput)>& sink);
  // propagate() one frame at a time, so that several concepts can take turns on each frame (one
  // backbone run per frame): step() processes the next frame, finish() flushes the delayed outputs.
  class Propagation {
   public:
    virtual ~Propagation() = default;
    virtual bool done() const = 0;  // every frame processed, or the sink asked to stop
    virtual void step() = 0;
    virtual void finish() = 0;
    // Open runs only (start_open_propagation): frames up to `last_frame` join the run.
    virtual void extend_to(int last_frame) = 0;
  };
  std::unique_ptr<Propagation> start_propagation(int start_frame, int max_frames, bool reverse,
                                                 std::function<bool(FrameOutput)> sink);
  // A forward propagation whose end is not known yet (live input: frames arrive while it runs): it has
  // no frame until extend_to(); the hot-start delay holds outputs back as in any run, and finish()
  // releases every output still held. Over the same frames it gives what start_propagation() gives.
  std::unique_ptr<Propagation> start_open_propagation(int start_frame, std::function<bool(FrameOutput)> sink);
  // New object ids start above *max_id, which this control plane raises as it adds objects: control
  // planes sharing one counter give ids that are unique across them (several concepts in one run).
  void share_object_ids(std::shared_ptr<int64_t> max_id) { shared_max_id_ = std::move(max_id); }

  // User removal of an object from every state (official remove_object).
  bool remove_object(int64_t obj_id);

  // Point / box prompt for one object on a frame (official add_tracker_new_points, points in
  // model-input pixels): a new object (obj_id not tracked: its own tracker state) or a refinement of
  // a tracked one. The object's points on this frame replace the earlier ones unless
  // !clear_old_points (then they are appended); the interactive head runs on all of them; the frame
  // becomes a conditioning frame of the object's state; the object's score becomes 1. Returns the
  // object's mask on the frame at video resolution (empty when the head says 'no object').
  struct PointResult {
    BinaryMask mask;
    float prob = 1.0f;
    bool new_object = false;
  };
  PointResult add_point_prompt(int frame_index, int64_t obj_id, const PointInputs& points, bool clear_old_points);
  // Mask prompt for one object on a frame (segmux extension; official add_sam2_new_points with the
  // tracker's add_new_masks, control_plane_masks.cpp): as a point prompt, the mask replacing the object's
  // points there; the object's output on the frame is the mask at video resolution.
  PointResult add_mask_prompt(int frame_index, int64_t obj_id, const Tensor& input_mask, const BinaryMask& video_mask);
  // The tracker alone on one frame for the states holding `ids` (official propagation_partial after
  // points: no detector, memory encoded on the frame): each requested object's mask at video
  // resolution and its tracker score logit.
  struct TrackedObject {
    BinaryMask mask;
    float score_logit = 0.f;
  };
  std::map<int64_t, TrackedObject> track_objects(int frame_index, bool reverse, const std::set<int64_t>& ids);
  bool has_object(int64_t obj_id) const;
  // Forgets prompts, objects, states and cached features.
  void reset();

  bool has_prompt() const { return prompt_.has_value(); }
  // The official find_text_batch of the prompt: the prompt and the two placeholder texts.
  std::vector<std::string> text_batch() const { return {*prompt_, "visual", "geometric"}; }
  const ControlConfig& config() const { return cfg_; }
  const std::vector<FrameDecisions>& decisions() const { return decisions_; }
  // false: keep only the latest frame's decisions (long or live runs through the library, where each
  // frame's record, low-res masks included, would otherwise accumulate for the whole video).
  void keep_decisions(bool keep) { keep_decisions_ = keep; }
  std::vector<TrackerStateView> tracker_state_views() const;
  std::vector<int64_t> object_ids() const { return obj_ids_; }
  // Each object's current score (-10000 once hot start removed it).
  const std::map<int64_t, float>& object_scores() const { return obj_id_to_score_; }

 private:
  struct TrackerState {
    int id = 0;
    std::vector<int64_t> obj_ids;
    // Multiplex entries appended for objects the state already holds (official add_new_masks for an
    // existing object: add_new_masks_to_existing_state appends it again). Entry obj_ids.size() + k holds
    // extra_slots[k]; tracked and encoded like every entry, but the state's objects are read off the
    // first obj_ids.size() rows only (docs/predictor.md "Mask prompts").
    std::vector<int64_t> extra_slots;
    MultiplexBuckets buckets;
    std::map<int, MemoryFrame> memory;  // frame -> memory frame info
    std::set<int> tracked_frames;       // frames this state has produced outputs for
    std::set<int> propagated_frames;    // of those, the frames a propagation ran on (official frames_already_tracked)
    std::map<int, size_t> output_entries;  // frame -> entries its stored output holds (appends need all)
    size_t num_entries() const { return obj_ids.size() + extra_slots.size(); }
    // Notes mask inputs of `ids` on a frame; returns whether they make it a conditioning frame (one
    // the state has not tracked yet).
    bool note_mask_inputs(int frame_index, const std::vector<int64_t>& ids);
    // Removes objects (their indices and ids) from the object list, the buckets and the mask inputs.
    void remove_objects(const std::vector<int>& indices, const std::vector<int64_t>& removed);
  };
  // A processed frame waiting for its (delayed) output.
  struct PendingFrame {
    int frame_index = 0;
    std::vector<int64_t> obj_ids;  // ascending
    std::map<int64_t, RleMask> masks;
    std::map<int64_t, float> scores;
    std::map<int64_t, float> sam2_scores;
    std::vector<int64_t> suppressed;
    FrameStats stats;
  };

  // One frame, step by step (control_plane_steps.cpp). const steps only decide; run_* and apply_*
  // steps call the model session.
  // `boxes`: box exemplars grounded with the text on this frame's detection (add_prompt only).
  PendingFrame process_frame(int frame_index, bool reverse, FramePhase phase,
                             const std::vector<sam31::BoxExemplar>& boxes = {});
  void run_detector(FrameWork& w);
  void run_tracker(FrameWork& w);
  void match_detections(FrameWork& w) const;
  void update_hotstart(FrameWork& w);
  void plan_reconditioning(FrameWork& w) const;
  void apply_reconditioning(FrameWork& w);
  void suppress_recent_occlusions(FrameWork& w);
  void apply_memory_encoding(FrameWork& w);
  void plan_object_changes(FrameWork& w) const;
  void update_object_metadata(FrameWork& w);
  void apply_object_changes(FrameWork& w);
  PendingFrame build_outputs(const FrameWork& w) const;
  void record_frame(FrameWork& w, const PendingFrame& pending);

  class OutputQueue;     // propagate()'s delayed, batched outputs
  class PropagationRun;  // start_propagation()'s Propagation
  std::vector<int64_t> unconfirmed_objects() const;
  FrameOutput postprocess(const PendingFrame& frame, const std::set<int64_t>& hidden) const;
  TrackerStateView view(const TrackerState& s) const;
  void ensure_frame_features(int frame_index);
  void remove_from_states(const std::vector<int64_t>& ids);
  void add_new_objects(int frame_index, const std::vector<int64_t>& ids, const MaskStack& det_masks);
  void insert_point_object(int frame_index, int64_t obj_id);                         // control_plane_points.cpp
  void clear_detector_inputs(TrackerState& state);                                   // control_plane_points.cpp
  TrackerState& extract_to_singleton(TrackerState& source, int64_t obj_id);          // control_plane_points.cpp
  void check_mask_for_existing_object(int frame_index, int64_t obj_id) const;        // control_plane_masks.cpp
  TrackerState& user_prompt_state(int frame_index, int64_t obj_id, PointResult& r);  // control_plane_points.cpp
  void finish_user_prompt(TrackerState& state, int frame_index, int64_t obj_id, float prob);

  ModelSession& model_;
  FrameSource& frames_;
  ControlConfig cfg_;
  ModelGeometry geo_;
  std::optional<std::string> prompt_;
  std::set<int> prompted_frames_;
  std::vector<TrackerState> states_;
  // Object metadata (global order = ascending id).
  std::vector<int64_t> obj_ids_;
  int64_t max_obj_id_ = -1;
  std::shared_ptr<int64_t> shared_max_id_;  // share_object_ids()
  std::map<int64_t, float> obj_id_to_score_;
  HotstartMetadata meta_;
  std::set<int> cached_frames_;
  std::vector<FrameDecisions> decisions_;
  bool keep_decisions_ = true;
  std::map<std::pair<int64_t, int>, PointInputs> points_;  // (object, frame) -> its points there
  std::set<int64_t> user_objects_;                         // added or refined by points: kept by hot start
  std::set<std::pair<int64_t, int>> user_masks_;           // (object, frame) given a mask prompt there
};

}  // namespace segmux::pipeline
