// segmux eval PRED GT: the standard video-object segmentation measures (DAVIS J, F, J&F) of a
// prediction against ground truth, or of one segmux run against another (bf16 against fp32, ONNX
// Runtime against our runtime). Formats: src/pipeline/outputs/eval_inputs.h; measures: eval_metrics.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/commands.h"
#include "pipeline/outputs/eval_inputs.h"
#include "pipeline/outputs/eval_metrics.h"

namespace segmux::apps {

namespace {

using namespace segmux::pipeline;

constexpr const char* kFooter = R"(
PRED and GT are each one of:
  a segmux output folder (tracks.json, else masks/NNNNN.png) or a tracks.json file
  a DAVIS annotation folder (one palette/grayscale PNG per frame, value = object id, 255 = void)
  a YTVIS json: annotations ({"videos", "annotations"}) or a results list (--format ytvis output)
Objects are paired by the assignment that maximises the mean J (--match best, the DAVIS unsupervised
protocol) or by equal ids (--match ids). A frame the prediction lacks counts as empty.

Examples:
  segmux eval out/dog DAVIS/Annotations/480p/dog --skip-first-last
  segmux eval out/bf16 out/fp32 --match ids          (how far is a bf16 run from the fp32 run?)
  segmux eval out/dog/ytvis_results.json valid.json --video-id 7 --json
  segmux eval results.json valid.json --all-videos   (every video: J&F over all objects, pooled mAP))";

void print_scores(const VideoScores& s) {
  std::printf("J&F-Mean  %.4f\n", s.jf);
  std::printf("J-Mean    %.4f   J-Recall %.4f   J-Decay %.4f\n", s.j.mean, s.j.recall, s.j.decay);
  std::printf("F-Mean    %.4f   F-Recall %.4f   F-Decay %.4f\n", s.f.mean, s.f.recall, s.f.decay);
  std::printf("frames    %d, objects %zu\n", s.frames, s.objects.size());
  if (s.ap)
    std::printf("mAP       %.4f   AP50 %.4f   AP75 %.4f   (%d categories, this video)\n", s.ap->ap, s.ap->ap50,
                s.ap->ap75, s.ap->categories);
  for (const ObjectScore& o : s.objects) {
    const std::string pred = o.pred_id ? std::to_string(*o.pred_id) : std::string("none");
    std::printf("  object %lld <- %s: J&F %.4f  J %.4f  F %.4f\n", static_cast<long long>(o.gt_id), pred.c_str(),
                (o.j.mean + o.f.mean) / 2, o.j.mean, o.f.mean);
  }
  for (int64_t id : s.unmatched_pred)
    std::printf("  predicted object %lld: no ground-truth object\n", static_cast<long long>(id));
}

int eval_all_videos(const std::string& pred_path, const std::string& gt_path, const EvalOptions& opt, bool json) {
  const DatasetScores d = evaluate_videos(load_ytvis_videos(pred_path), load_ytvis_videos(gt_path), opt);
  if (json) {
    nlohmann::json j = {{"J&F-Mean", d.jf},     {"J-Mean", d.j.mean},  {"J-Recall", d.j.recall},
                        {"J-Decay", d.j.decay}, {"F-Mean", d.f.mean},  {"F-Recall", d.f.recall},
                        {"F-Decay", d.f.decay}, {"objects", d.objects}};
    if (d.ap) j["mAP"] = d.ap->ap, j["AP50"] = d.ap->ap50, j["AP75"] = d.ap->ap75;
    nlohmann::json videos = nlohmann::json::array();
    for (const auto& [id, v] : d.videos) {
      nlohmann::json e = scores_json(v);
      e["video_id"] = id;
      videos.push_back(std::move(e));
    }
    j["videos"] = std::move(videos);
    std::printf("%s\n", json_text(j, 2).c_str());
    return 0;
  }
  for (const auto& [id, v] : d.videos)
    std::printf("video %lld: J&F %.4f  J %.4f  F %.4f  (%zu objects)\n", static_cast<long long>(id), v.jf, v.j.mean,
                v.f.mean, v.objects.size());
  std::printf("J&F-Mean  %.4f\n", d.jf);
  std::printf("J-Mean    %.4f   J-Recall %.4f   J-Decay %.4f\n", d.j.mean, d.j.recall, d.j.decay);
  std::printf("F-Mean    %.4f   F-Recall %.4f   F-Decay %.4f\n", d.f.mean, d.f.recall, d.f.decay);
  std::printf("videos    %zu, objects %d\n", d.videos.size(), d.objects);
  if (d.ap)
    std::printf("mAP       %.4f   AP50 %.4f   AP75 %.4f   (%d categories)\n", d.ap->ap, d.ap->ap50, d.ap->ap75,
                d.ap->categories);
  return 0;
}

int eval_main(int argc, char** argv) {
  CLI::App app{"Region (J), boundary (F) and J&F of a video segmentation against ground truth or another run.",
               "segmux eval"};
  app.footer(kFooter);
  std::string pred_path, gt_path, match = "best";
  EvalOptions opt;
  EvalInputOptions pred_in, gt_in;
  int64_t video_id = -1, pred_video_id = -1;
  bool json = false;
  app.add_option("pred", pred_path, "prediction: segmux output folder, tracks.json, DAVIS folder or YTVIS json")
      ->required();
  app.add_option("gt", gt_path, "ground truth (or the reference run), in the same forms")->required();
  app.add_option("--match", match, "best (default: the pairing with the largest mean J) or ids (equal ids)")
      ->check(CLI::IsMember({"best", "ids"}));
  app.add_option("--bound-th", opt.bound_th,
                 "F's boundary tolerance: a fraction of the image diagonal (< 1) or pixels (>= 1); default 0.008")
      ->check(CLI::PositiveNumber);
  app.add_flag("--skip-first-last", opt.skip_first_last,
               "leave out the first and last annotated frames (the DAVIS 2017 semi-supervised protocol)");
  app.add_option("--video-id", video_id, "the video of a YTVIS json holding several (both sides)");
  app.add_option("--pred-video-id", pred_video_id, "the video of PRED when it differs from --video-id");
  bool all_videos = false;
  app.add_flag("--all-videos", all_videos,
               "PRED and GT are YTVIS jsons: every ground-truth video against the prediction's video of the same id; "
               "J&F over every object, mask AP pooled over the videos")
      ->excludes("--video-id")
      ->excludes("--pred-video-id");
  app.add_flag("--json", json, "print the scores as JSON");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  opt.matching = parse_object_matching(match);
  if (video_id >= 0) pred_in.video_id = gt_in.video_id = video_id;
  if (pred_video_id >= 0) pred_in.video_id = pred_video_id;
  if (all_videos) return eval_all_videos(pred_path, gt_path, opt, json);
  const MaskVideo gt = load_mask_video(gt_path, gt_in);
  const MaskVideo pred = load_mask_video(pred_path, pred_in);
  const VideoScores scores = evaluate_video(pred, gt, opt);
  if (json) {
    nlohmann::json j = scores_json(scores);
    j["pred"] = pred.description;
    j["gt"] = gt.description;
    j["match"] = match;
    j["bound_th"] = opt.bound_th;
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    std::printf("pred: %s\ngt:   %s\n", pred.description.c_str(), gt.description.c_str());
    print_scores(scores);
  }
  return 0;
}

CommandRegistration eval_registration("eval",
                                      "J, F and J&F of a video segmentation against ground truth or another run",
                                      eval_main);

}  // namespace

}  // namespace segmux::apps
