// Every hyperparameter of the SAM 3.1 multiplex video control plane, with the official SAM 3.1
// defaults (model_builder.build_sam3_multiplex_video_predictor -> Sam3MultiplexTrackingWithInteractivity,
// commit 9f22cb9). Loadable from a flat JSON of settings by field name (the fixtures' config.json and
// trace.json are read by verify/sam31/fixture_config.h).
#pragma once
#include <string>

#include "models/sam31/config.h"

namespace segmux::pipeline {

struct ControlConfig {
  // Detection: probs = sigmoid(class logit, presence included). Mask NMS over probs > score threshold.
  float score_threshold_detection = 0.4f;
  float image_only_det_thresh = 0.5f;  // new-object threshold for single-image resources
  float det_nms_thresh = 0.1f;         // NMS runs only when > 0
  bool det_nms_use_iom = true;         // intersection over the smaller mask instead of IoU
  bool suppress_det_close_to_boundary = true;
  float boundary_margin = 0.025f;  // box centre must be inside [margin, 1 - margin]
  // Association (overlap of binarised low-res masks; IoM when use_iom_recondition, else IoU).
  float assoc_iou_thresh = 0.1f;      // detection "matched" to a track
  float trk_assoc_iou_thresh = 0.5f;  // track counted as matched (else "unmatched")
  float new_det_thresh = 0.65f;       // kept detection with no track overlap >= assoc -> new object
  float high_conf_thresh = 0.8f;      // recondition candidates: detection score and tracker prob
  // Object count cap (-1 or 0 = none); new detections beyond it are dropped, lowest scores first.
  int max_num_objects = 16;
  // Hot start.
  int hotstart_delay = 15;  // frames outputs are held back; 0 = none
  int hotstart_unmatch_thresh = 8;
  int hotstart_dup_thresh = 8;
  bool suppress_unmatched_only_within_hotstart = false;
  int init_trk_keep_alive = 0;
  int max_trk_keep_alive = 8;
  int min_trk_keep_alive = -4;
  bool decrease_trk_keep_alive_for_empty_masklets = false;
  // The official SAM 3.1 path computes keep-alive suppression and hot-start removals but never hides
  // them retroactively in delayed outputs (its removed/suppressed id sets stay empty). Setting these
  // to true hides them, which the official code does not do.
  bool hide_removed_objects_retroactively = false;
  bool hide_keep_alive_suppressed_objects = false;
  // Occlusion-based overlap suppression before memory encoding (0 = off).
  float suppress_overlapping_based_on_recent_occlusion_threshold = 0.7f;
  bool allow_unoccluded_to_suppress = false;
  // Hole filling / sprinkle removal of tracker and new-detection masks (0 = off, the 3.1 value).
  int fill_hole_area = 0;
  // Reconditioning from high-confidence detections every n-th frame (<= 0 = off).
  int recondition_every_nth_frame = 16;
  bool use_iom_recondition = true;  // also switches the association metric to IoM
  float iom_thresh_recondition = 0.5f;
  float iou_thresh_recondition = 0.8f;
  // Masklet confirmation: shown only once detected in this many consecutive frames (looked up
  // consecutive_det_thresh - 1 frames ahead of the output frame).
  bool masklet_confirmation_enable = true;
  int masklet_confirmation_consecutive_det_thresh = 3;
  // Output batching (affects when outputs are produced, and therefore which confirmation states exist).
  int postprocess_batch_size = 16;
  // Multiplex buckets.
  int bucket_capacity = 16;  // allowed slots per bucket (multiplex_count in eval)
  int multiplex_count = 16;  // slots per bucket
  // Tracker memory (for the glue's frame selection; reported in TrackerStateView).
  int num_maskmem = 7;
  int max_obj_ptrs_in_encoder = 16;
  int max_cond_frames_in_attn = 4;
  // Output probability threshold of the request API (applies nowhere in 3.1 outputs; kept for parity).
  float default_output_prob_thresh = 0.5f;

  int effective_max_objects() const { return max_num_objects > 0 ? max_num_objects : 10000; }
};

// Official defaults of build_sam3_multiplex_video_predictor (max_num_objects 16, multiplex_count 16).
ControlConfig default_control_config();
// The official defaults sized to a model: its multiplex bucket (slots and allowed slots), object cap and
// tracker memory sizes. What every front door (track, serve, the C API and Python) runs with unless a
// control-plane file says otherwise.
ControlConfig control_config_for(const sam31::ModelConfig& model);
// Single images (official is_image_only): the lower new-object threshold and no object cap.
ControlConfig for_single_image(ControlConfig config);
// Reads a flat JSON object of settings by field name ({"new_det_thresh": 0.7, ...}) over the official
// defaults. An unknown key or a wrong type is an error naming it; a fixture's config.json / trace.json
// is refused with the command that converts it.
ControlConfig load_control_config(const std::string& path);
ControlConfig parse_control_config(const std::string& json_text, const std::string& what);
// Every setting in that form (parse_control_config reads it back to equal settings).
std::string control_config_to_json(const ControlConfig& c);
// Refuses settings the control plane cannot run with (e.g. a batch size of 0 would never flush);
// `what` names the source in the error.
void validate_control_config(const ControlConfig& c, const std::string& what);

}  // namespace segmux::pipeline
