#include "verify/sam31/fixture_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_limits.h"
#include "io/printable.h"

namespace segmux::verify {

namespace {

using nlohmann::json;

// A fixture config is a few levels deep (object -> table -> entry -> value list).
constexpr JsonLimits kFixtureConfigLimits{.max_depth = 16, .max_bytes = size_t(16) << 20};

// Keys of the fixtures' "reduced_vs_official" table that describe the run, not the model.
bool is_run_only_key(const std::string& key) { return key == "seed"; }

// Compares one entry of the fixtures' "derived" table with our derived value.
void check_derived(const json& derived, const std::string& key, const json& ours, const std::string& what) {
  if (!derived.contains(key)) return;
  SEGMUX_CHECK(derived[key] == ours, what, ": derived size '", key, "' is ", describe_json(derived[key]),
               derived[key].is_number() ? "" : (" " + derived[key].dump().substr(0, 100)),
               " in the file but the config gives ", ours.dump());
}

void cross_check_derived(const sam31::ModelConfig& c, const json& derived, const std::string& what) {
  SEGMUX_CHECK(derived.is_object(), what, ": 'derived' must be an object");
  const sam31::ModelConfig o = sam31::default_config();
  for (const auto* cfg : {&c, &o}) {
    const std::string p = cfg == &c ? "" : "official_";
    check_derived(derived, p + "token_grid", json::array({cfg->token_grid(), cfg->token_grid()}), what);
    check_derived(derived, p + "pos_embed_pretrain_grid", cfg->pos_embed_pretrain_grid(), what);
    check_derived(derived, p + "pos_embed_tiling", cfg->pos_embed_tiling(), what);
    check_derived(derived, p + "vit_mlp_hidden", cfg->vit_mlp_hidden(), what);
    json levels = json::array();
    for (int s : cfg->neck_levels()) levels.push_back(json::array({s, s}));
    check_derived(derived, p + "neck_levels", levels, what);
    check_derived(derived, p + "low_res_mask_size", cfg->low_res_mask_size(), what);
    check_derived(derived, p + "input_mask_size", cfg->input_mask_size(), what);
    check_derived(derived, p + "memory_tokens_per_frame", cfg->memory_tokens_per_frame(), what);
    auto hr = cfg->tracker_high_res_channels();
    check_derived(derived, p + "tracker_high_res_channels", json::array({hr[0], hr[1]}), what);
    check_derived(derived, p + "mem_dim", cfg->mem_dim(), what);
    check_derived(derived, p + "maskmem_downsampler_channels", cfg->maskmem_downsampler_channels(), what);
    check_derived(derived, p + "detector_head_dim", cfg->detector_head_dim(), what);
    check_derived(derived, p + "vit_head_dim", cfg->vit_head_dim(), what);
  }
}

// The table's reduced values (and the sizes the fixture states elsewhere) as a flat model config.
json flat_config(const json& j, const std::string& what) {
  json flat = json::object();
  const json& table = j["reduced_vs_official"];
  SEGMUX_CHECK(table.is_object(), what, ": 'reduced_vs_official' must be an object, got ", describe_json(table));
  for (auto it = table.begin(); it != table.end(); ++it) {
    const std::string& key = it.key();
    if (is_run_only_key(key)) continue;
    SEGMUX_CHECK(it->is_object() && it->contains("reduced"), what, ": entry '", printable(key),
                 "' of reduced_vs_official lacks a 'reduced' value (it is ", describe_json(*it), ")");
    flat[key] = (*it)["reduced"];
  }
  if (j.contains("derived")) {
    const json& d = j["derived"];
    SEGMUX_CHECK(d.is_object(), what, ": 'derived' must be an object, got ", describe_json(d));
    for (const char* key : {"text_context_length", "vocab_size"})
      if (d.contains(key)) flat[key] = d[key];
  }
  if (j.contains("control_plane_and_tracker_settings")) {
    const json& s = j["control_plane_and_tracker_settings"];
    for (auto it = s.begin(); s.is_object() && it != s.end(); ++it) {
      if (!it->is_object()) continue;
      for (const char* key : {"num_maskmem", "max_obj_ptrs_in_encoder", "max_cond_frames_in_attn",
                              "multimask_min_pt_num", "multimask_max_pt_num"})
        if (it->contains(key)) flat[key] = (*it)[key];
      // The interactive head's dynamic multimask fallback (the multiplex head has it switched off).
      const auto extra = it->find("interactive_sam_mask_decoder_extra_args");
      if (extra != it->end() && extra->is_object()) {
        if (extra->contains("dynamic_multimask_stability_delta"))
          flat["multimask_stability_delta"] = (*extra)["dynamic_multimask_stability_delta"];
        if (extra->contains("dynamic_multimask_stability_thresh"))
          flat["multimask_stability_thresh"] = (*extra)["dynamic_multimask_stability_thresh"];
      }
    }
  }
  return flat;
}

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

bool is_fixture_config(const json& j) { return j.is_object() && j.contains("reduced_vs_official"); }

std::string read_config_text(const std::string& path) {
  try {
    return read_untrusted_text_file(path, kFixtureConfigLimits.max_bytes);
  } catch (const Error& e) {
    fail("config file: ", e.what());
  }
}

}  // namespace

sam31::ModelConfig parse_fixture_config(const std::string& json_text, const std::string& what) {
  const json j = parse_untrusted_json(json_text, what, kFixtureConfigLimits);
  SEGMUX_CHECK(is_fixture_config(j), what, ": not a fixture config (no 'reduced_vs_official' table)");
  const sam31::ModelConfig cfg = sam31::parse_config(flat_config(j, what).dump(), what);
  if (j.contains("derived")) cross_check_derived(cfg, j["derived"], what);
  return cfg;
}

sam31::ModelConfig load_fixture_config(const std::string& path) {
  return parse_fixture_config(read_config_text(path), printable(path));
}

sam31::ModelConfig load_model_or_fixture_config(const std::string& path) {
  const std::string text = read_config_text(path);
  if (is_fixture_config(parse_untrusted_json(text, printable(path), kFixtureConfigLimits)))
    return parse_fixture_config(text, printable(path));
  return sam31::parse_config(text, printable(path));
}

pipeline::ControlConfig parse_fixture_control_config(const std::string& text, const std::string& what) {
  json root = parse_untrusted_json(text, what);
  const json* settings = nullptr;
  if (root.contains("control_plane_and_tracker_settings"))
    settings = &root["control_plane_and_tracker_settings"];
  else if (root.contains("control_plane_hyperparameters"))
    settings = &root["control_plane_hyperparameters"];
  SEGMUX_CHECK(settings && settings->is_object(), what,
               ": neither 'control_plane_and_tracker_settings' nor 'control_plane_hyperparameters' found");
  pipeline::ControlConfig c = pipeline::default_control_config();
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
  pipeline::validate_control_config(c, what);
  return c;
}

pipeline::ControlConfig load_fixture_control_config(const std::string& path) {
  return parse_fixture_control_config(read_config_text(path), printable(path));
}

}  // namespace segmux::verify
