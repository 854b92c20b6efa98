#include "pipeline/predictor/control_config.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <variant>
#include <vector>

#include "core/error.h"
#include "io/json_limits.h"
#include "io/printable.h"

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

using Member = std::variant<float ControlConfig::*, int ControlConfig::*, bool ControlConfig::*>;

// Every setting by its name (the official keyword's, as the fields are named).
const std::vector<std::pair<std::string, Member>>& control_fields() {
  static const std::vector<std::pair<std::string, Member>> fields = {
      {"score_threshold_detection", &ControlConfig::score_threshold_detection},
      {"image_only_det_thresh", &ControlConfig::image_only_det_thresh},
      {"det_nms_thresh", &ControlConfig::det_nms_thresh},
      {"det_nms_use_iom", &ControlConfig::det_nms_use_iom},
      {"suppress_det_close_to_boundary", &ControlConfig::suppress_det_close_to_boundary},
      {"boundary_margin", &ControlConfig::boundary_margin},
      {"assoc_iou_thresh", &ControlConfig::assoc_iou_thresh},
      {"trk_assoc_iou_thresh", &ControlConfig::trk_assoc_iou_thresh},
      {"new_det_thresh", &ControlConfig::new_det_thresh},
      {"high_conf_thresh", &ControlConfig::high_conf_thresh},
      {"max_num_objects", &ControlConfig::max_num_objects},
      {"hotstart_delay", &ControlConfig::hotstart_delay},
      {"hotstart_unmatch_thresh", &ControlConfig::hotstart_unmatch_thresh},
      {"hotstart_dup_thresh", &ControlConfig::hotstart_dup_thresh},
      {"suppress_unmatched_only_within_hotstart", &ControlConfig::suppress_unmatched_only_within_hotstart},
      {"init_trk_keep_alive", &ControlConfig::init_trk_keep_alive},
      {"max_trk_keep_alive", &ControlConfig::max_trk_keep_alive},
      {"min_trk_keep_alive", &ControlConfig::min_trk_keep_alive},
      {"decrease_trk_keep_alive_for_empty_masklets", &ControlConfig::decrease_trk_keep_alive_for_empty_masklets},
      {"hide_removed_objects_retroactively", &ControlConfig::hide_removed_objects_retroactively},
      {"hide_keep_alive_suppressed_objects", &ControlConfig::hide_keep_alive_suppressed_objects},
      {"suppress_overlapping_based_on_recent_occlusion_threshold",
       &ControlConfig::suppress_overlapping_based_on_recent_occlusion_threshold},
      {"allow_unoccluded_to_suppress", &ControlConfig::allow_unoccluded_to_suppress},
      {"fill_hole_area", &ControlConfig::fill_hole_area},
      {"recondition_every_nth_frame", &ControlConfig::recondition_every_nth_frame},
      {"use_iom_recondition", &ControlConfig::use_iom_recondition},
      {"iom_thresh_recondition", &ControlConfig::iom_thresh_recondition},
      {"iou_thresh_recondition", &ControlConfig::iou_thresh_recondition},
      {"masklet_confirmation_enable", &ControlConfig::masklet_confirmation_enable},
      {"masklet_confirmation_consecutive_det_thresh", &ControlConfig::masklet_confirmation_consecutive_det_thresh},
      {"postprocess_batch_size", &ControlConfig::postprocess_batch_size},
      {"bucket_capacity", &ControlConfig::bucket_capacity},
      {"multiplex_count", &ControlConfig::multiplex_count},
      {"num_maskmem", &ControlConfig::num_maskmem},
      {"max_obj_ptrs_in_encoder", &ControlConfig::max_obj_ptrs_in_encoder},
      {"max_cond_frames_in_attn", &ControlConfig::max_cond_frames_in_attn},
      {"default_output_prob_thresh", &ControlConfig::default_output_prob_thresh},
  };
  return fields;
}

void read_field(ControlConfig& c, Member member, const std::string& key, const json& v, const std::string& what) {
  std::visit(
      [&](auto m) {
        using T = std::remove_reference_t<decltype(c.*m)>;
        if constexpr (std::is_same_v<T, bool>) {
          SEGMUX_CHECK(v.is_boolean(), what, ": '", key, "' must be true or false, got ", describe_json(v));
          c.*m = v.get<bool>();
        } else if constexpr (std::is_same_v<T, int>) {
          const bool fits = v.is_number_integer() &&
                            (v.is_number_unsigned() ? v.get<uint64_t>() <= INT_MAX
                                                    : v.get<int64_t>() >= INT_MIN && v.get<int64_t>() <= INT_MAX);
          SEGMUX_CHECK(fits, what, ": '", key, "' must be an integer in int range, got ", describe_json(v));
          c.*m = int(v.get<int64_t>());
        } else {
          SEGMUX_CHECK(v.is_number() && std::abs(v.get<double>()) <= std::numeric_limits<float>::max(), what, ": '",
                       key, "' must be a finite number, got ", describe_json(v));
          c.*m = float(v.get<double>());
        }
      },
      member);
}
}  // namespace

ControlConfig parse_control_config(const std::string& text, const std::string& what) {
  const json root = parse_untrusted_json(text, what);
  SEGMUX_CHECK(root.is_object(), what, ": control-plane settings must be a JSON object, got ", describe_json(root));
  // The golden fixtures' form is read by verification only (verify/sam31/fixture_config.h).
  SEGMUX_CHECK(!root.contains("control_plane_and_tracker_settings") && !root.contains("control_plane_hyperparameters"),
               what,
               " is a fixture's config.json or trace.json, not control-plane settings; convert it with "
               "`segmux fixture-config --control ",
               what, " -o control.json`");
  ControlConfig c = default_control_config();
  for (auto it = root.begin(); it != root.end(); ++it) {
    const auto& table = control_fields();
    const auto f = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == it.key(); });
    SEGMUX_CHECK(f != table.end(), what, ": unknown control-plane setting '", printable(it.key()), "'");
    read_field(c, f->second, f->first, *it, what);
  }
  validate_control_config(c, what);
  return c;
}

std::string control_config_to_json(const ControlConfig& c) {
  nlohmann::ordered_json j;
  for (const auto& field : control_fields()) {
    const auto& key = field.first;  // a named copy: clang cannot capture a structured binding in C++20
    std::visit(
        [&](auto m) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(c.*m)>, float>) {
            // The float's shortest decimal (0.4, not 0.4000000059604645): it reads back to the same float.
            char text[32];
            const auto end = std::to_chars(text, text + sizeof text, c.*m).ptr;
            j[key] = std::strtod(std::string(text, end).c_str(), nullptr);
          } else {
            j[key] = c.*m;
          }
        },
        field.second);
  }
  return j.dump(1);
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
  std::string text;
  try {
    text = read_untrusted_text_file(path, JsonLimits{}.max_bytes);
  } catch (const Error& e) {
    fail("control-plane settings: ", e.what());
  }
  return parse_control_config(text, printable(path));
}

}  // namespace segmux::pipeline
