// The boundary between the SAM 3.1 control plane (decisions, bookkeeping) and the tensor work
// (candidates run by our runtime or ONNX Runtime, or recorded outputs), in two parts:
//
// - Model: what every video shares and nobody changes: the config (geometry), the tokenizer, one
//   runner per compiled file. Opened once (candidate_model.h, ort_backend.h, model_store.h); makes
//   sessions.
// - ModelSession: one video's tensors: text encodings (cached per text batch), frame features, the
//   tracker memory banks by state id. One method per kind of model call the official predictor
//   makes; nothing hidden carries from one call to the next except those tensors (a detection names
//   its text and box exemplars).
//
// Tensors are plain segmux::Tensor in the official layouts; sizes come from the model config. The
// control plane owns every decision: which objects exist, which tracker state / bucket slot holds them,
// which frames of a state are conditioning frames and which objects received mask inputs there.
// Choosing the memory frames for a propagation among TrackerStateView::memory_frames (num_maskmem,
// max_cond_frames_in_attn, object pointers) is the session's (tracker glue's) job.
//
// Threads: a Model is safe to use from any thread (new_session() and geometry() included); the
// candidate runs of all its sessions are serialised by the model (one run at a time). A ModelSession
// is used by one thread at a time; different sessions of one model may be used on different threads
// at once. The Model must outlive its sessions (front doors hold it by shared_ptr).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "models/sam31/box_exemplars.h"

namespace segmux::pipeline {

// An RGB frame, u8, row-major height x width x 3, at the video's original size.
struct RgbFrame {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
};

struct ModelGeometry {
  int image_size = 0;         // model input (1008 official)
  int low_res_mask_size = 0;  // detector / tracker mask logits (288 official)
  int input_mask_size = 0;    // tracker mask inputs and memory-encoder masks (1152 official)
};

// Detector output for one frame, all queries, before NMS (official forward_grounding output).
struct DetectorOutput {
  Tensor pred_logits;     // f32 [Q]: class logit with the presence logit already folded in
  Tensor boxes_xyxy;      // f32 [Q, 4]: normalised to [0, 1]
  Tensor mask_logits;     // f32 [Q, Hm, Wm], Hm = Wm = low_res_mask_size
  Tensor presence_logit;  // f32 [1]: the presence logit alone (image processor); undefined if not known
};

// Tracker propagation result of one state on one frame (data space, the state's object order).
struct TrackerOutput {
  Tensor low_res_masks;        // f32 [N, Hm, Wm] (the best multimask choice, official propagate_in_video)
  Tensor object_score_logits;  // f32 [N]
};

// One frame of a state's memory bank as the control plane sees it.
struct MemoryFrame {
  int frame_index = 0;
  bool conditioning = false;           // conditioning frame (mask input on an untracked frame)
  std::vector<int64_t> input_obj_ids;  // objects that received a mask input on this frame
};

// Everything a session needs to know about one tracker state for a call.
struct TrackerStateView {
  int state_id = 0;                        // stable while the state exists
  std::vector<int64_t> obj_ids;            // object index i of the state -> object id
  std::vector<std::vector<int>> buckets;   // bucket -> slots (object index, -1 padding, -1116 removed)
  std::vector<int> bucket_ids;             // stable id per bucket (memory of a deleted bucket can go)
  std::vector<MemoryFrame> memory_frames;  // frames with encoded memory, ascending frame index
  int num_frames = 0;                      // frames in the video (temporal position encodings)
  // The official interactive propagation (propagation_partial, after point prompts): the tracker alone
  // on the session's cached features (level-2 features in bf16), each frame's memory encoded from the
  // decoder's own masks at the image size with its own object scores, stored as a non-conditioning
  // frame unless the frame holds inputs.
  bool tracker_only = false;
};

// Point / box prompts of ONE object on one frame (official add_new_points), in model-input pixels
// (relative coordinates * image_size): labels 1 positive, 0 negative, 2 / 3 box top-left / bottom-right.
struct PointInputs {
  std::vector<float> xy;  // x0, y0, x1, y1, ...
  std::vector<int64_t> labels;
};

// Every mask token of the interactive SAM heads for one prompt (SAM-1-style image predictor).
struct ImagePromptOutput {
  Tensor masks;               // f32 [T, Hm, Wm] low-res logits, token 0 = single mask, 1.. = multimask
  Tensor iou;                 // f32 [T] IoU predictions
  int single_mask_token = 0;  // the single-mask output: token 0, or the best multimask token when token
                              // 0's stability score is low (dynamic_multimask_via_stability)
};

enum class MaskInputKind {
  NewObjects,   // new objects from detections (official add_new_masks(add_mask_to_memory=True))
  Recondition,  // existing objects re-anchored to detector masks (add_new_masks(reconditioning=True))
};

class ModelSession;

class Model {
 public:
  virtual ~Model() = default;
  virtual ModelGeometry geometry() const = 0;
  // A new, empty session: no text encoded, no frame, no tracker state. Thread-safe.
  virtual std::unique_ptr<ModelSession> new_session() = 0;
};

class ModelSession {
 public:
  virtual ~ModelSession() = default;

  virtual ModelGeometry geometry() const = 0;

  // A tracker state id not used before in this session (the control planes of several concepts share
  // one session: each takes its state ids here).
  int new_state_id() { return next_state_id_++; }

  // Vision backbone (+ detector and tracker necks) of one frame, kept under frame_index until
  // release_frame(frame_index); nothing is run when the session holds that frame already.
  virtual void run_backbone(int frame_index, const RgbFrame& frame) = 0;
  // Backbone on an input the caller pre-processed (f32 [1, 3, S, S]; the image processor normalises
  // without the video loader's float16 rounding), replacing features held under frame_index. Sessions
  // that cannot do this say so.
  virtual void run_backbone_input(int /*frame_index*/, const Tensor& /*image*/, int /*width*/, int /*height*/) {
    fail("this model cannot run the backbone on a pre-processed input");
  }
  virtual bool has_frame(int frame_index) const = 0;
  virtual void release_frame(int frame_index) = 0;

  // Detector (fusion encoder, DETR decoder, segmentation head) on a held frame, grounding `text_batch`
  // (official find_text_batch: [prompt, "visual", "geometric"]; its encoding is cached per batch) and
  // the frame's box exemplars (official per_frame_geometric_prompt; empty: the text alone). Sessions
  // without geometry refuse exemplars.
  virtual DetectorOutput detect(int frame_index, const std::vector<std::string>& text_batch,
                                const std::vector<sam31::BoxExemplar>& exemplars) = 0;
  // Encodes a text batch now and keeps it, as detect would on first use. Callers that know the text
  // before a frame's backbone runs call it first: the text encoder's weights (1.4 GB in fp32 at full
  // size) are then resident while the backbone's are not yet, instead of beside them (peak RSS).
  virtual void prepare_text(const std::vector<std::string>& /*text_batch*/) {}

  // Tracker propagation of one state onto a cached frame: memory attention over the frames the glue
  // selects from state.memory_frames, multiplex mask decoder per bucket, demux to data space.
  // No memory is encoded here. A frame whose state.memory_frames entry has mask inputs
  // (input_obj_ids not empty: the official "consolidated" frames) is not re-run: the session returns
  // the outputs it stored for that frame (add_masks' mask-as-output results, as officially).
  virtual TrackerOutput propagate(const TrackerStateView& state, int frame_index, bool reverse) = 0;

  // Memory encoder for all objects of a state on a frame, storing the result in the state's bank
  // (replacing an earlier encoding of that frame). masks: f32 [N, Hi, Wi] mask logits at
  // input_mask_size (after the control plane's suppression rules); object_score_logits: f32 [N]
  // (+10 / -10 from mask presence). Object order = state.obj_ids. The memory encoder's
  // "conditioning objects" (sam31::assemble_memory_encoder_inputs) are the objects listed in
  // input_obj_ids of this frame's entry in state.memory_frames (empty on ordinary frames). The frame is
  // stored as a conditioning frame iff that entry says so; a frame's flag can change between calls
  // (removals downgrade it, the lost-conditioning fix promotes one), so a session keeps its
  // cond / non-cond maps in sync with state.memory_frames on every call.
  virtual void encode_memory(const TrackerStateView& state, int frame_index, const Tensor& masks,
                             const Tensor& object_score_logits) = 0;

  // Mask inputs for some objects of a state on a cached frame: masks bool/u8 [K, Hi, Wi] at
  // input_mask_size, for obj_ids (a subset of state.obj_ids, already placed in state.buckets). The
  // session runs the tracker's mask-as-output path and re-encodes the memory of the objects' state on
  // this frame (official add_new_masks + propagate_in_video_preflight). `conditioning` says whether the
  // frame is stored as a conditioning frame (false when the state had already tracked it). Either way
  // the memory encoder's conditioning objects are the frame entry's input_obj_ids (the official trace
  // shows object 3 added on tracked frame 7 encoded with conditioning_objects [3], stored non-cond).
  virtual void add_masks(const TrackerStateView& state, int frame_index, const std::vector<int64_t>& obj_ids,
                         const Tensor& masks, MaskInputKind kind, bool conditioning) = 0;

  // A user's mask prompt for one object of a state on a cached frame (segmux extension: official
  // add_new_masks with the user's mask, then propagate_in_video_preflight): as add_masks, but the mask
  // comes at both sizes add_new_masks reads, each resized from the user's size as officially:
  // `input_mask` f32 [1, Hi, Wi] in [0, 1] at input_mask_size (the mask-as-output input, not
  // binarised) and `video_mask` u8 [1, H, W] at the video size (the object's output there and the
  // source of the frame's memory).
  virtual void add_mask_prompt(const TrackerStateView& /*state*/, int /*frame_index*/, int64_t /*obj_id*/,
                               const Tensor& /*input_mask*/, const Tensor& /*video_mask*/, bool /*conditioning*/) {
    fail("this model cannot take mask prompts");
  }

  // Point / box prompts for one object of a state on a cached frame (official add_new_points with
  // the interactive head, then propagate_in_video_preflight): the object's mask and score replace its
  // outputs of this frame, the state's memory of this frame is re-encoded with the object as the
  // frame's conditioning object, stored as a conditioning frame iff `conditioning`. Returns the
  // object's low-res mask (f32 [1, Hm, Wm], -1024 where the object is absent) and score logit [1].
  virtual TrackerOutput add_points(const TrackerStateView& /*state*/, int /*frame_index*/, int64_t /*obj_id*/,
                                   const PointInputs& /*points*/, bool /*conditioning*/) {
    fail("this model cannot run point or box prompts");
  }
  // The SAM-1-style image predictor (official SAM3InteractiveImagePredictor._predict) on a cached frame:
  // the interactive SAM heads with point / box prompts (model-input pixels; box corners first; SAM's pad
  // point is added when there are points) and an optional mask prompt (f32 [1, Hm, Wm] low-res logits,
  // undefined: none). No tracker state is read or written.
  virtual ImagePromptOutput predict_image_prompt(int /*frame_index*/, const PointInputs& /*points*/,
                                                 const Tensor& /*mask_input*/) {
    fail("this model cannot run the interactive image predictor");
  }
  // The official refinement of the only object of a tracker state on a frame the state has tracked
  // (tracker add_new_points: extracted into a singleton state, merged back into the emptied state with
  // a fresh layout): `before` and `after` show the same state and object, after.buckets the fresh
  // layout. Every stored frame keeps the memory row <object index in before> of its bucket axis (the
  // official slices the bucket axis with the object index) as the new bucket 0 memory, and the object's
  // pointer and outputs move to its new slot.
  virtual void relayout_refined_object(const TrackerStateView& /*before*/, const TrackerStateView& /*after*/,
                                       int64_t /*obj_id*/) {
    fail("this model cannot refine tracked objects with points");
  }
  // The official first refinement of an object that shares its tracker state with others
  // (_extract_object_to_singleton_state): `singleton` is a new state holding only obj_id, `source` its
  // state before the object leaves it. The singleton's bank gets every stored frame of the source with
  // the same kind, the object's pointer (in its slot 0) and outputs, and NO spatial memory: the official
  // demuxes the per-bucket memories as if they were per slot, which fails its shape check, and keeps
  // None.
  virtual void extract_object(const TrackerStateView& /*source*/, const TrackerStateView& /*singleton*/,
                              int64_t /*obj_id*/) {
    fail("this model cannot refine tracked objects with points");
  }
  // Objects were removed from a state (state shows the buckets after removal; removed_obj_ids were
  // in it before) or the whole state was dropped (drop_state).
  virtual void remove_objects(const TrackerStateView& state, const std::vector<int64_t>& removed_obj_ids) = 0;
  virtual void drop_state(int state_id) = 0;

 private:
  int next_state_id_ = 0;
};

}  // namespace segmux::pipeline
