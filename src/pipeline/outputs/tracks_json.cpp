#include "pipeline/outputs/tracks_json.h"

#include <cmath>

#include "core/error.h"
#include "pipeline/masks/coco_rle.h"

namespace segmux::pipeline {

RleForm parse_rle_form(const std::string& name) {
  if (name == "compressed") return RleForm::compressed;
  if (name == "uncompressed") return RleForm::uncompressed;
  fail("unknown RLE form '", name, "' (compressed or uncompressed)");
}

const char* rle_form_description(RleForm form) {
  return form == RleForm::compressed
             ? "COCO compressed RLE: counts is pycocotools' string form (column-major, runs start with 0s)"
             : "COCO uncompressed RLE: column-major, counts start with a run of 0s";
}

double round_decimals(double value, int decimals) {
  if (!std::isfinite(value)) return value;
  const double scale = std::pow(10.0, decimals);
  const double r = std::round(value * scale) / scale;
  return r == 0 ? 0.0 : r;  // no "-0.0"
}

nlohmann::json mask_rle_json(const BinaryMask& mask, RleForm form) {
  RleMask rle = rle_encode(mask);
  nlohmann::json counts;
  if (form == RleForm::compressed)
    counts = coco_counts_string(rle);
  else
    counts = rle.counts;
  return {{"size", {rle.height, rle.width}}, {"counts", std::move(counts)}};
}

nlohmann::json frame_json(const FrameOutput& out, RleForm form, std::optional<double> time_s,
                          const std::string& default_prompt) {
  nlohmann::json objs = nlohmann::json::array();
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    nlohmann::json box = nlohmann::json::array();
    for (float v : out.boxes_xywh[k]) box.push_back(round_decimals(v, kBoxDecimals));
    objs.push_back({{"id", out.obj_ids[k]},
                    {"prompt", k < out.prompts.size() ? out.prompts[k] : default_prompt},
                    {"score", round_decimals(out.probs[k], kScoreDecimals)},
                    {"box_xywh", std::move(box)},
                    {"area", out.masks[k].area()},
                    {"mask_rle", mask_rle_json(out.masks[k], form)}});
  }
  nlohmann::json time = nullptr;
  if (time_s) time = round_decimals(*time_s, kTimeDecimals);
  return {{"frame_index", out.frame_index},
          {"time_s", std::move(time)},
          {"objects", std::move(objs)},
          {"num_obj_tracked", out.stats.num_obj_tracked},
          {"num_obj_dropped", out.stats.num_obj_dropped}};
}

}  // namespace segmux::pipeline
