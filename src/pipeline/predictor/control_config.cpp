#include "pipeline/predictor/control_config.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/json_limits.h"

namespace segmux::pipeline {

ControlConfig default_control_config() { return ControlConfig{}; }

ControlConfig control_config_for(const sam31::ModelConfig& model) {
  ControlConfig c = default_control_config();
  c.multiplex_count = model.multiplex_count;
  c.bucket_capacity = model.multiplex_count;
  c.max_num_objects = model.max_num_objects;
  c.num_maskmem = model.num_maskmem;
  c.max_obj_ptrs_in_encoder = model.max_obj_ptrs_in_encoder;
  return c;
}

ControlConfig for_single_image(ControlConfig c) {
  c.new_det_thresh = c.image_only_det_thresh;
  c.max_num_objects = std::numeric_limits<int>::max();
  return c;
}

namespace {
using nlohmann::json;

template <typename T>
void read(const json& obj, const char* key, T& out, const std::string& what) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return;
  try {
    if constexpr (std::is_same_v<T, bool>) {
      SEGMUX_CHECK(it->is_boolean(), what, ": '", key, "' should be true/false");
      out = it->template get<bool>();
    } else {
      SEGMUX_CHECK(it->is_number(), what, ": '", key, "' should be a number");
      out = it->template get<T>();
    }
  } catch (const json::exception& e) {
    fail(what, ": cannot read '", key, "': ", e.what());
  }
}

const json* find_section(const json& root, const char* prefix) {
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it.key().rfind(prefix, 0) == 0 && it->is_object()) return &*it;
  return nullptr;
}
}  // namespace

ControlConfig parse_control_config(const std::string& text, const std::string& what) {
  json root = parse_untrusted_json(text, what);
  const json* settings = nullptr;
  if (root.contains("control_plane_and_tracker_settings"))
    settings = &root["control_plane_and_tracker_settings"];
  else if (root.contains("control_plane_hyperparameters"))
    settings = &root["control_plane_hyperparameters"];
  SEGMUX_CHECK(settings && settings->is_object(), what,
               ": neither 'control_plane_and_tracker_settings' nor 'control_plane_hyperparameters' found");
  ControlConfig c;
  const json* demo = find_section(*settings, "demo_model");
  SEGMUX_CHECK(demo, what, ": no 'demo_model(...)' section with the control-plane settings");
  const json& d = *demo;
  read(d, "score_threshold_detection", c.score_threshold_detection, what);
  read(d, "image_only_det_thresh", c.image_only_det_thresh, what);
  read(d, "det_nms_thresh", c.det_nms_thresh, what);
  read(d, "det_nms_use_iom", c.det_nms_use_iom, what);
  read(d, "suppress_det_close_to_boundary", c.suppress_det_close_to_boundary, what);
  read(d, "assoc_iou_thresh", c.assoc_iou_thresh, what);
  read(d, "trk_assoc_iou_thresh", c.trk_assoc_iou_thresh, what);
  read(d, "new_det_thresh", c.new_det_thresh, what);
  read(d, "max_num_objects", c.max_num_objects, what);
  read(d, "hotstart_delay", c.hotstart_delay, what);
  read(d, "hotstart_unmatch_thresh", c.hotstart_unmatch_thresh, what);
  read(d, "hotstart_dup_thresh", c.hotstart_dup_thresh, what);
  read(d, "suppress_unmatched_only_within_hotstart", c.suppress_unmatched_only_within_hotstart, what);
  read(d, "init_trk_keep_alive", c.init_trk_keep_alive, what);
  read(d, "max_trk_keep_alive", c.max_trk_keep_alive, what);
  read(d, "min_trk_keep_alive", c.min_trk_keep_alive, what);
  read(d, "decrease_trk_keep_alive_for_empty_masklets", c.decrease_trk_keep_alive_for_empty_masklets, what);
  read(d, "suppress_overlapping_based_on_recent_occlusion_threshold",
       c.suppress_overlapping_based_on_recent_occlusion_threshold, what);
  read(d, "allow_unoccluded_to_suppress", c.allow_unoccluded_to_suppress, what);
  read(d, "fill_hole_area", c.fill_hole_area, what);
  read(d, "recondition_every_nth_frame", c.recondition_every_nth_frame, what);
  read(d, "use_iom_recondition", c.use_iom_recondition, what);
  read(d, "iom_thresh_recondition", c.iom_thresh_recondition, what);
  read(d, "iou_thresh_recondition", c.iou_thresh_recondition, what);
  read(d, "masklet_confirmation_enable", c.masklet_confirmation_enable, what);
  read(d, "masklet_confirmation_consecutive_det_thresh", c.masklet_confirmation_consecutive_det_thresh, what);
  read(d, "postprocess_batch_size", c.postprocess_batch_size, what);
  read(d, "bucket_capacity", c.bucket_capacity, what);
  bool o2o = false;
  read(d, "o2o_matching_masklets_enable", o2o, what);
  SEGMUX_CHECK(!o2o, what, ": o2o_matching_masklets_enable is not supported (the official code asserts it off)");
  float bbox_iou = -1.f;
  read(d, "reconstruction_bbox_iou_thresh", bbox_iou, what);
  SEGMUX_CHECK(bbox_iou <= 0.f, what, ": reconstruction_bbox_iou_thresh > 0 is not supported");
  if (const json* mux = find_section(*settings, "multiplex_controller")) {
    read(*mux, "eval_multiplex_count", c.bucket_capacity, what);
    read(*mux, "multiplex_count", c.multiplex_count, what);
  }
  if (const json* trk = find_section(*settings, "tracker_model")) {
    read(*trk, "num_maskmem", c.num_maskmem, what);
    read(*trk, "max_obj_ptrs_in_encoder", c.max_obj_ptrs_in_encoder, what);
    read(*trk, "max_cond_frames_in_attn", c.max_cond_frames_in_attn, what);
    read(*trk, "multiplex_count", c.multiplex_count, what);
  }
  if (const json* pred = find_section(*settings, "predictor"))
    read(*pred, "default_output_prob_thresh", c.default_output_prob_thresh, what);
  validate_control_config(c, what);
  return c;
}

void validate_control_config(const ControlConfig& c, const std::string& what) {
  SEGMUX_CHECK(c.bucket_capacity > 0 && c.bucket_capacity <= c.multiplex_count, what, ": bucket capacity ",
               c.bucket_capacity, " must be in [1, multiplex_count=", c.multiplex_count, "]");
  SEGMUX_CHECK(c.postprocess_batch_size >= 1, what, ": postprocess_batch_size must be >= 1");
  SEGMUX_CHECK(c.hotstart_delay >= 0, what, ": hotstart_delay must be >= 0");
  SEGMUX_CHECK(c.masklet_confirmation_consecutive_det_thresh >= 1, what,
               ": masklet_confirmation_consecutive_det_thresh must be >= 1");
}

ControlConfig load_control_config(const std::string& path) {
  std::ifstream f(path);
  SEGMUX_CHECK(f.good(), "cannot open control-plane config ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_control_config(ss.str(), path);
}

}  // namespace segmux::pipeline
