#include "apps/format_options.h"

#include "pipeline/outputs/eval_exports.h"

namespace segmux::apps {

void add_format_options(CLI::App& app, TrackSettings& s, bool with_video_id) {
  app.add_option("--format", s.formats,
                 "also write evaluation / annotation files made from tracks.json: ytvis (ytvis_results.json), coco "
                 "(coco_results.json), cvat (cvat_annotations.xml), labelstudio (labelstudio_tasks.json); cvat and "
                 "labelstudio add review_frames.json, the frames where the tracker was least sure (repeatable or "
                 "comma-separated)")
      ->check([](const std::string& v) -> std::string {
        try {
          pipeline::parse_export_formats({v});
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      });
  if (with_video_id)
    app.add_option("--video-id", s.video_id, "the video_id of ytvis_results.json (default 1)")
        ->check(CLI::NonNegativeNumber);
}

}  // namespace segmux::apps
