// tracker_io: the C++ glue between the predictor's memory bank and the two tracker candidates
// (propagation_decoder, memory_encoder). No graph here: frame selection exactly as the official SAM 3.1
// multiplex tracker does it (_prepare_memory_conditioned_features with use_memory_selection=False),
// padding into the candidates' fixed slots, mux of data-space inputs into one bucket, and demux of the
// candidates' mux-space outputs back to per-object (data-space) results.
//
// Typical use for one tracker state on frame t (forward tracking):
//   for each bucket b:
//     PropagationInputs in = assemble_propagation_inputs(cfg, bank, assignment, b, t, num_frames, feats);
//     outs[b] = propagation_session.run(in.tensors);
//   PropagationResult r = demux_propagation_outputs(cfg, assignment, outs);   // data space
//   ... control plane (final masks, object scores) ...
//   for each bucket b:
//     enc[b] = memory_session.run(assemble_memory_encoder_inputs(cfg, assignment, b, pix_feat, masks,
//                                                                scores, conditioning_objects));
//   bank.non_cond_frames[t] = StoredFrame{stack_buckets(enc[*]["maskmem_features_bf16"]),
//                                         feats.image, r.stored_obj_ptr};
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/config.h"

namespace segmux::sam31 {

// Slot values of a multiplex assignment (multiplex_utils.py).
constexpr int kSlotEmpty = -1;       // padding, never used
constexpr int kSlotRemoved = -1116;  // object removed; slot stays dead

// One tracker state's multiplex layout: buckets[b][s] = data-space object index (0..N-1) or a
// negative marker. Data-space tensors are ordered by object index.
struct MultiplexAssignment {
  std::vector<std::vector<int>> buckets;

  int num_buckets() const { return int(buckets.size()); }
  int num_objects() const;  // number of slots holding an object index (>= 0)
  // Throws unless every bucket has multiplex_count slots and the object indices are 0..N-1, once each.
  void validate(int multiplex_count) const;
  // (bucket, slot) of an object index; throws when absent.
  std::pair<int, int> find(int object_index) const;
};

// One stored frame of a tracker state's memory bank (the official "compact_current_out").
struct StoredFrame {
  Tensor maskmem_features;  // bf16 (buckets, D, g, g); undefined = no spatial memory for this frame
  Tensor image_features;    // f32 (1, D, g, g): propagation level-2 features of that frame (as stored)
  Tensor obj_ptr;           // f32 (buckets, M, D) mux space (zeros in empty slots); undefined = none
};

struct MemoryBank {
  std::map<int, StoredFrame> cond_frames;      // conditioning frames by frame index
  std::map<int, StoredFrame> non_cond_frames;  // other frames by frame index
};

// Tracker settings that decide which memories are read (official SAM 3.1 builder values by default).
// use_memory_selection (SAM2Long-style frame filtering) is False in SAM 3.1 and not implemented here.
struct MemorySelectionOptions {
  bool track_in_reverse = false;
  bool only_obj_ptrs_in_the_past = false;  // only_obj_ptrs_in_the_past_for_eval
  bool use_signed_tpos_enc_to_obj_ptrs = false;
  bool keep_first_cond_frame = false;
  int memory_temporal_stride = 1;  // memory_temporal_stride_for_eval
};

// What the official code would attend to on frame `frame_idx` (before padding).
struct MemorySelection {
  struct Spatial {
    int frame_idx;
    bool is_cond;
    int tpos_index;  // row of maskmem_tpos_enc (use_maskmem_tpos_v2)
  };
  struct Pointer {
    int frame_idx;
    bool is_cond;
    int rel_pos;  // temporal distance as the official computes it (abs unless signed)
    float tpos;   // rel_pos / (min(num_frames, max_obj_ptrs_in_encoder) - 1), fp32
  };
  std::vector<Spatial> spatial;   // in the official concatenation order
  std::vector<Pointer> pointers;  // in the official concatenation order
};
MemorySelection select_memory(const ModelConfig& cfg, const MemoryBank& bank, int frame_idx, int num_frames,
                              const MemorySelectionOptions& opt = {});

// Current-frame features (from the backbone candidate; NCHW, batch 1).
struct CurrentFrameFeatures {
  Tensor image;        // f32 (1, D, g, g) propagation level 2
  Tensor image_pos;    // f32 (1, D, g, g) its sine position encoding (same for every frame)
  Tensor high_res_s0;  // f32 (1, D/8, 4g, 4g) = sam_mask_decoder.conv_s0(propagation level 0)
  Tensor high_res_s1;  // f32 (1, D/4, 2g, 2g) = sam_mask_decoder.conv_s1(propagation level 1)
};

// Slot counts of the compiled propagation graph; 0 = the candidate's (propagation_memory_slots /
// propagation_pointer_slots of the config).
struct PropagationSlots {
  int memory_slots = 0;
  int pointer_slots = 0;
};

struct PropagationInputs {
  std::map<std::string, Tensor> tensors;  // by propagation_decoder input name
  MemorySelection selection;
  bool has_spatial_memory = false;  // false: the candidate passes the image features through
};
// Inputs for bucket `bucket` of a state with the given assignment. Spatial slots beyond the selection
// (and pointer slots) are zero with valid = 0. Throws if the selection exceeds the slots (a smaller
// slot variant: check select_memory(...) sizes first and pick the graph that fits).
PropagationInputs assemble_propagation_inputs(const ModelConfig& cfg, const MemoryBank& bank,
                                              const MultiplexAssignment& assignment, int bucket, int frame_idx,
                                              int num_frames, const CurrentFrameFeatures& feats,
                                              const MemorySelectionOptions& opt = {},
                                              const PropagationSlots& slots = {});

// Data-space results of one propagation step for all objects of a state (object-index order), as
// _forward_sam_heads returns them.
struct PropagationResult {
  Tensor low_res_multimasks;   // (N, 3, 4g, 4g); -1024 where the object-score logit <= 0
  Tensor ious;                 // (N, 3)
  Tensor low_res_masks;        // (N, 1, 4g, 4g): the mask with the highest IoU (first on ties)
  Tensor object_score_logits;  // (N, 1)
  Tensor obj_ptr;              // (N, D)
  Tensor sam_tokens;           // (N, 3, D)
  Tensor stored_obj_ptr;       // (buckets, M, D): what the memory bank keeps (zeros in unused slots)
};
// outputs[b] = the propagation_decoder outputs of bucket b.
PropagationResult demux_propagation_outputs(const ModelConfig& cfg, const MultiplexAssignment& assignment,
                                            const std::vector<std::map<std::string, Tensor>>& outputs);

// Memory-encoder inputs for one bucket. mask_logits: data space (N, 1, H, W) (any square H = W that the
// compiled graph expects); object_score_logits (N, 1); conditioning_objects: data-space object indices
// whose mask is a conditioning input on this frame; pix_feat (1, D, g, g) (the caller passes it rounded to
// bf16 where the official does, e.g. image features kept as bf16 at conditioning frames).
std::map<std::string, Tensor> assemble_memory_encoder_inputs(const ModelConfig& cfg,
                                                             const MultiplexAssignment& assignment, int bucket,
                                                             const Tensor& pix_feat, const Tensor& mask_logits,
                                                             const Tensor& object_score_logits,
                                                             const std::set<int>& conditioning_objects);

// Concatenates per-bucket tensors (1, ...) along axis 0 -> (buckets, ...).
Tensor stack_buckets(const std::vector<Tensor>& per_bucket);

// Official seq-first features (HW, 1, D) -> NCHW (1, D, g, g) (any dtype).
Tensor seq_first_to_nchw(const Tensor& t, int64_t grid);
// The official multiplex-state JSON as the fixtures and trace.json write it
// ({"assignments": [[0, 1, -1116, -1]], ...}) -> MultiplexAssignment.
MultiplexAssignment parse_multiplex_state(const std::string& json_text);

}  // namespace segmux::sam31
