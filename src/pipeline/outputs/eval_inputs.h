// What `segmux eval` compares: masks of objects over frames (eval_metrics.h MaskVideo), read from
//   - a segmux output folder (its tracks.json; or, without one, its masks/NNNNN.png: value = obj_id + 1)
//     or a tracks.json file;
//   - a DAVIS annotation folder: one indexed (palette) or grayscale PNG per frame, value = object id,
//     0 background, 255 void (not judged); frames numbered by their file names when those are numbers
//     (00000.png), else by their sorted order;
//   - a YTVIS json: the dataset's annotations ({"videos", "annotations", "categories"}) or a results
//     file (a list of {"video_id", "category_id", "score", "segmentations"}), for one video (--video-id
//     when the file holds several); masks as COCO RLE (string or list counts); polygons are refused.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/outputs/eval_metrics.h"

namespace segmux::pipeline {

struct EvalInputOptions {
  std::optional<int64_t> video_id;  // which video of a YTVIS json
};

MaskVideo load_mask_video(const std::string& path, const EvalInputOptions& opt = {});

// Every video of a YTVIS json (annotations or results), by video id, in the file's order.
std::vector<std::pair<int64_t, MaskVideo>> load_ytvis_videos(const std::string& path);

// A tracks.json (or other evaluation json) read with bounds fit for a whole video's RLE masks.
nlohmann::json read_eval_json(const std::string& path);

// {"size": [h, w], "counts": "pycocotools string" | [runs]} as a width x height mask; errors name `what`
// (a polygon, another size, runs that do not cover the mask).
RleMask rle_from_json(const nlohmann::json& j, int width, int height, const std::string& what);

}  // namespace segmux::pipeline
