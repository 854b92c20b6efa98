// Prediction files for the official evaluators and for annotation tools, made from a run's tracks.json
// (`segmux track --format ...`, docs/track.md "Evaluation and annotation formats"):
//   ytvis        DIR/ytvis_results.json: the YTVIS / SA-Co video results list the official evaluators
//                read (sam3/eval/ytvis_eval.py): one entry per object {video_id, category_id, score
//                (mean over the frames it was tracked, as the official PostProcessAPIVideo), segmentations
//                (per frame: compressed COCO RLE, null where the object was not output), bboxes (pixel
//                xywh, zeros there), areas, per_frame_scores (-1e8 there)}.
//   coco         DIR/coco_results.json: COCO instance segmentation results (sam3/eval/coco_writer.py):
//                per frame and visible object {image_id = frame index, category_id, segmentation, score,
//                bbox (pixel xywh), area (a fraction of the image, as the official writer)}.
//   cvat         DIR/cvat_annotations.xml: CVAT for images 1.1 XML: per frame an <image> with a <mask>
//                per visible object (CVAT's RLE over the mask's box, row-major, from a 0-run), labels
//                = prompts, the segmux id in an "obj_id" attribute.
//   labelstudio  DIR/labelstudio_tasks.json: a Label Studio video task with one "videorectangle" track
//                per object (keyframes in percent of the frame; interpolation ends where it disappears).
// With cvat or labelstudio, DIR/review_frames.json lists the frames where the tracker was least sure:
// the lowest scores of visible objects, the largest score drops from an object's previous visible frame,
// and objects whose mask vanished. An object with an empty mask on a frame (tracked, not visible) counts
// as not output there, in every format.
// category_id = 1 + the index of the object's prompt among the run's prompts.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace segmux::pipeline {

enum class ExportFormat { ytvis, coco, cvat, labelstudio };
// "ytvis", "coco", "cvat", "labelstudio" (each entry may be a comma-separated list); throws on others.
std::vector<ExportFormat> parse_export_formats(const std::vector<std::string>& names);
const char* export_file_name(ExportFormat format);
constexpr const char* kReviewFramesFile = "review_frames.json";
// Every file name an export may write (for a staged output folder's commit).
std::vector<std::string> export_file_names();

struct ExportContext {
  int64_t video_id = 1;    // YTVIS video id
  double fps = 25;         // Label Studio keyframe times when frames have none
  int review_count = 20;   // entries per list in review_frames.json
  std::string media_name;  // the video / image file the annotation tools should open
};

nlohmann::json ytvis_results(const nlohmann::json& tracks, const ExportContext& ctx);
nlohmann::json coco_results(const nlohmann::json& tracks);
std::string cvat_xml(const nlohmann::json& tracks, const ExportContext& ctx);
nlohmann::json labelstudio_tasks(const nlohmann::json& tracks, const ExportContext& ctx);
nlohmann::json review_frames(const nlohmann::json& tracks, const ExportContext& ctx);

// `segmux segment --format coco`: the COCO results of single images, from each image's JSON document
// (segmux-image-1: width, height, objects) and its image id; categories by `prompts` as above.
nlohmann::json coco_image_results(const std::vector<std::pair<nlohmann::json, int64_t>>& images,
                                  const std::vector<std::string>& prompts);
// An image's COCO id: its file name's number when the name is one (COCO's 000000397133.jpg -> 397133),
// else its position among the images (0-based).
int64_t coco_image_id(const std::string& path, size_t position);

// Writes the asked files into `dir` (each atomically) from `tracks` (a tracks.json document); returns
// the names written.
std::vector<std::string> write_exports(const std::string& dir, const nlohmann::json& tracks,
                                       const std::vector<ExportFormat>& formats, const ExportContext& ctx);

}  // namespace segmux::pipeline
