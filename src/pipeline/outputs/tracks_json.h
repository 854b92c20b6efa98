// The per-frame JSON of tracks.json (docs/track.md): objects with rounded scores and boxes, masks as
// COCO RLE, compressed (pycocotools' string counts, the default) or uncompressed (a list of runs).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pipeline/predictor/control_plane.h"

namespace segmux::pipeline {

enum class RleForm { compressed, uncompressed };
// "compressed" / "uncompressed"; parse_rle_form throws on anything else, naming the value.
RleForm parse_rle_form(const std::string& name);
const char* rle_form_description(RleForm form);  // the header's "rle" text

// Decimal places written to tracks.json: scores 4, normalised box coordinates 5 (about 1/50 px at
// 2000 px), times 6 (microseconds). Rounded in double so that the JSON shows e.g. 0.9123, not
// 0.91229999...
constexpr int kScoreDecimals = 4, kBoxDecimals = 5, kTimeDecimals = 6;
double round_decimals(double value, int decimals);

nlohmann::json mask_rle_json(const BinaryMask& mask, RleForm form);
// One frame's entry: frame_index, time_s (null when unknown), objects (each with the prompt that found
// it: out.prompts, else `default_prompt`), frame stats.
nlohmann::json frame_json(const FrameOutput& out, RleForm form, std::optional<double> time_s,
                          const std::string& default_prompt);

}  // namespace segmux::pipeline
