// segmux segment IMAGE... --prompt TEXT [--box x,y,w,h[:neg]]... --out DIR: concept segmentation of single images with
// the official image-processor semantics (pipeline/predictor/image_processor.h). Per image STEM:
//   DIR/STEM.png          16-bit instance mask: 0 = background, id + 1 (the highest-scoring object
//                         covering a pixel, since image-mode masks may overlap)
//   DIR/STEM.json         the objects: id, prompt, score, box_xywh (normalised), box_xyxy_px, area, RLE
//   DIR/STEM.overlay.png  the image with coloured masks, boxes and ids
// Everything is staged in DIR/.partial-<pid> and moved into DIR when every image is done.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/precision_option.h"
#include "apps/prompt_args.h"
#include "apps/segment_interactive.h"
#include "apps/staged_output.h"
#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "io/files.h"
#include "io/printable.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/eval_exports.h"
#include "pipeline/outputs/eval_inputs.h"
#include "pipeline/outputs/outputs.h"
#include "pipeline/outputs/tracks_json.h"
#include "pipeline/predictor/image_processor.h"
#include "verify/demo_model.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {
namespace {

namespace fs = std::filesystem;
using namespace segmux::pipeline;

// The objects of every prompt on one image, ids 0.. in prompt order, then query order.
struct ImageResult {
  FrameOutput out;  // ids, scores, normalised boxes, masks (for the overlay and the JSON)
  std::vector<std::string> prompts;
  std::vector<std::array<float, 4>> boxes_px;
};

// --box arguments as the image processor's exemplars on this image: normalised cxcywh computed in
// double, as the official Sam3Processor gets them from Python floats.
std::vector<sam31::BoxExemplar> image_boxes(const std::vector<BoxArg>& boxes, int width, int height) {
  std::vector<sam31::BoxExemplar> out;
  const double W = width, H = height;
  for (const BoxArg& b : boxes)
    out.push_back({(double(b.x) + double(b.w) / 2) / W, (double(b.y) + double(b.h) / 2) / H, double(b.w) / W,
                   double(b.h) / H, b.positive});
  return out;
}

// Every prompt with the boxes; boxes alone (no prompt) are grounded with the official text "visual".
ImageResult segment_image(ImageProcessor& proc, const RgbImage& img, const std::vector<std::string>& prompts,
                          const std::vector<BoxArg>& box_args) {
  ImageResult r;
  proc.set_image(img);
  const std::vector<sam31::BoxExemplar> boxes = image_boxes(box_args, img.width, img.height);
  const std::vector<std::string> texts = prompts.empty() ? std::vector<std::string>{""} : prompts;
  for (const auto& text : texts) {
    const std::string p = text.empty() ? "visual" : text;
    ImageObjects o = proc.segment(text, boxes);
    for (size_t k = 0; k < o.scores.size(); ++k) {
      const auto& b = o.boxes_xyxy_px[k];
      r.out.obj_ids.push_back(int64_t(r.out.obj_ids.size()));
      r.out.probs.push_back(o.scores[k]);
      r.out.boxes_xywh.push_back({b[0] / float(img.width), b[1] / float(img.height), (b[2] - b[0]) / float(img.width),
                                  (b[3] - b[1]) / float(img.height)});
      r.out.masks.push_back(std::move(o.masks[k]));
      r.prompts.push_back(p);
      r.boxes_px.push_back(b);
    }
  }
  return r;
}

void write_image_outputs(const std::string& dir, const std::string& stem, const std::string& source,
                         const RgbImage& img, const ImageResult& r, float threshold) {
  const auto& out = r.out;
  // Instance PNG: lower-scoring objects first, so the highest score wins where masks overlap.
  std::vector<size_t> order(out.obj_ids.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out.probs[a] < out.probs[b]; });
  std::vector<uint16_t> ids(size_t(img.width) * size_t(img.height), 0);
  for (size_t k : order) {
    SEGMUX_CHECK(out.obj_ids[k] < 65535, "object id ", out.obj_ids[k], " does not fit a 16-bit mask PNG");
    for (size_t i = 0; i < ids.size(); ++i)
      if (out.masks[k].pixels[i]) ids[i] = uint16_t(out.obj_ids[k] + 1);
  }
  write_png_gray(dir + "/" + stem + ".png", img.width, img.height, ids, true);
  nlohmann::json objs = nlohmann::json::array();
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    nlohmann::json box = nlohmann::json::array(), box_px = nlohmann::json::array();
    for (float v : out.boxes_xywh[k]) box.push_back(round_decimals(v, kBoxDecimals));
    for (float v : r.boxes_px[k]) box_px.push_back(round_decimals(v, 2));
    objs.push_back({{"id", out.obj_ids[k]},
                    {"prompt", valid_utf8(r.prompts[k])},
                    {"score", round_decimals(out.probs[k], kScoreDecimals)},
                    {"box_xywh", std::move(box)},
                    {"box_xyxy_px", std::move(box_px)},
                    {"area", out.masks[k].area()},
                    {"mask_rle", mask_rle_json(out.masks[k], RleForm::compressed)}});
  }
  nlohmann::json j = {{"format", "segmux-image-1"},
                      {"source", valid_utf8(source)},
                      {"width", img.width},
                      {"height", img.height},
                      {"threshold", threshold},
                      {"rle", rle_form_description(RleForm::compressed)},
                      {"box_format", "xywh normalised to [0,1], 5 decimals; box_xyxy_px in pixels, 2 decimals"},
                      {"objects", objs}};
  const std::string text = json_text(j) + "\n";
  write_file_atomic(dir + "/" + stem + ".json", text.data(), text.size());
  write_png_rgb(dir + "/" + stem + ".overlay.png", draw_overlay(img, out));
}

constexpr const char* kFooter = R"(
Examples:
  segmux segment photo.jpg --prompt "dog" --weights sam3.1_multiplex.pt --out out/dog
  segmux segment a.png b.png --prompt cat --prompt dog --model compiled/ --out out/pets --threshold 0.3
  segmux segment photo.jpg --box 133,54,60,50 --box 0,39,251,176:neg --model compiled/ --out out/like
  segmux segment photo.jpg --point 163,79 --multimask --model compiled/ --out out/click --logits-out click.npy
  segmux segment photo.jpg --point 163,79 --point 150,60 --mask-input click.npy --mask-input-index 2 \
                 --model compiled/ --out out/refined

Per image STEM (the file name without extension) in DIR:
  STEM.png          16-bit grayscale: 0 = background, id + 1 (highest score wins where masks overlap)
  STEM.json         objects: id, prompt, score, box_xywh (normalised), box_xyxy_px, area, COCO RLE mask
  STEM.overlay.png  the image with coloured masks, boxes and ids
Official image-processor semantics: score = sigmoid(logit) * sigmoid(presence) > --threshold, no NMS,
masks at image resolution. Details: docs/track.md

Interactive predictor (the official SAM-1-style predict: --point, --multimask, --mask-input, --logits-out,
--return-logits, or --interactive with one --box x,y,w,h): per image STEM.json (every candidate mask with its
score and COCO RLE, `best`) and STEM.mask<K>.png; docs/segment-interactive.md)";

int run_segment(int argc, char** argv) {
  CLI::App app{"Segment every object matching a text prompt in single images (the official image processor).",
               "segmux segment"};
  app.footer(kFooter);
  std::vector<std::string> images, prompts, boxes;
  std::string out_dir;
  ModelSource src;
  bool demo = false, quiet = false, json = false;
  float threshold = 0.5f;
  InteractiveSegmentArgs interactive;
  app.add_option("images", images, "image files (PNG/JPEG/BMP/...)")->required();
  app.add_option("--prompt,-p", prompts, "text prompt (repeatable: every concept is segmented)");
  app.add_option("-o,--out,--output", out_dir, "output folder (created if absent)")->required();
  auto* thr = app.add_option("--threshold", threshold, "score threshold (default 0.5, official confidence_threshold)");
  app.add_option("--box", boxes,
                 "box exemplar x,y,w,h[:neg] in pixels (repeatable; with every --prompt, or alone: objects like "
                 "the positive boxes)");
  auto* w = app.add_option("--weights", src.weights, "SAM 3.1 checkpoint; compiled on first use");
  app.add_option("--config", src.config, "model config JSON (default: full-size SAM 3.1)")->needs(w);
  src.read_config = verify::load_model_or_fixture_config;  // a fixture's config.json too
  app.add_option("--vocab", src.vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  auto* m = app.add_option("--model", src.model_dir, "folder of compiled candidates (with model.json)")->excludes(w);
  app.add_flag("--demo", demo, "built-in tiny random-weight model")->excludes(w)->excludes(m);
  app.add_option("--cache-dir", src.cache_dir, "where compiled candidates are cached (default ~/.cache/segmux)");
  add_threads_option(app, src.num_threads, "CPU threads");
  add_precision_option(app, src.precision, kCheckpointPrecisionHelp);
  app.add_flag("--quiet,-q", quiet, "no progress output");
  app.add_flag("--json", json, "print a JSON summary on stdout");
  std::string format;
  app.add_option("--format", format,
                 "coco: also write coco_results.json (COCO instance segmentation results; image_id = the file "
                 "name's number, else the image's position)")
      ->check(CLI::IsMember({"coco"}));
  add_interactive_options(app, interactive);
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  if (interactive_requested(interactive)) {
    SEGMUX_USAGE_CHECK(!src.weights.empty() || !src.model_dir.empty() || demo,
                       "no model: give --weights CHECKPOINT, --model DIR or --demo");
    check_precision_use(app, src);
    SEGMUX_USAGE_CHECK(prompts.empty(),
                       "--prompt is for concept segmentation; the interactive predictor takes "
                       "--point / --box / --mask-input");
    SEGMUX_USAGE_CHECK(thr->count() == 0, "--threshold is for concept segmentation, not the interactive predictor");
    return run_interactive_segment(images, boxes, out_dir, src, demo, quiet, json, interactive);
  }
  SEGMUX_USAGE_CHECK(!src.weights.empty() || !src.model_dir.empty() || demo,
                     "no model: give --weights CHECKPOINT, --model DIR or --demo");
  check_precision_use(app, src);
  SEGMUX_USAGE_CHECK(threshold >= 0.f && threshold < 1.f, "--threshold ", threshold, " must be in [0, 1)");
  SEGMUX_USAGE_CHECK(!prompts.empty() || !boxes.empty(), "no prompt: give --prompt TEXT and/or --box x,y,w,h");
  for (const auto& p : prompts) SEGMUX_USAGE_CHECK(!p.empty(), "--prompt is empty");
  for (const auto& p : prompts)
    SEGMUX_USAGE_CHECK(is_valid_utf8(p), "--prompt \"", printable(p, 80), "\" is not valid UTF-8 text");
  std::vector<BoxArg> box_args;
  for (const auto& b : boxes) box_args.push_back(parse_box_arg(b));
  std::set<std::string> stems;
  for (const auto& path : images)
    SEGMUX_USAGE_CHECK(stems.insert(fs::path(path).stem().string()).second, "two images named '",
                       fs::path(path).stem().string(), "': their outputs would collide (" + path + ")");
  auto log = [&](const std::string& s) {
    if (!quiet) std::fprintf(stderr, "%s\n", s.c_str());
  };

  // Checked before the model loads; a failure later (a corrupt image) still leaves DIR as it was.
  for (const auto& path : images) SEGMUX_CHECK(fs::is_regular_file(path), "cannot read image '", path, "': not a file");
  for (const auto& path : images) {
    if (boxes.empty()) break;
    const RgbImage img = read_image(path);
    for (size_t k = 0; k < boxes.size(); ++k)
      check_box(box_args[k], img.width, img.height, "--box " + boxes[k] + " on " + path);
  }
  if (demo) src.model_dir = verify::ensure_demo_model(src.cache_dir, log);
  OpenedModel model = open_model(src, log);
  log("model: " + model.description);
  ImageProcessor proc(*model.model, threshold);

  StagedOutput staged(out_dir);
  std::vector<std::string> written;
  nlohmann::json summary = nlohmann::json::array();
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string stem = fs::path(images[i]).stem().string();
    const RgbImage img = read_image(images[i]);
    ImageResult r = segment_image(proc, img, prompts, box_args);
    write_image_outputs(staged.stage(), stem, images[i], img, r, threshold);
    for (const char* suffix : {".png", ".json", ".overlay.png"}) written.push_back(stem + suffix);
    log(images[i] + ": " + std::to_string(r.out.obj_ids.size()) + " objects");
    summary.push_back({{"image", valid_utf8(images[i])},
                       {"objects", r.out.obj_ids.size()},
                       {"json", (fs::path(out_dir) / (stem + ".json")).string()}});
  }
  if (format == "coco") {  // from the JSON documents just written (eval_exports.h)
    std::vector<std::pair<nlohmann::json, int64_t>> docs;
    for (size_t i = 0; i < images.size(); ++i)
      docs.emplace_back(read_eval_json(staged.stage() + "/" + fs::path(images[i]).stem().string() + ".json"),
                        coco_image_id(images[i], i));
    const std::string text = json_text(coco_image_results(docs, prompts)) + "\n";
    write_file_atomic(staged.stage() + "/coco_results.json", text.data(), text.size());
    written.push_back("coco_results.json");
  }
  staged.commit(written);
  if (json) std::printf("%s\n", json_text({{"images", summary}, {"out", out_dir}}, 2).c_str());
  return 0;
}

CommandRegistration reg("segment", "segment objects named by a text prompt in single images", run_segment);

}  // namespace
}  // namespace segmux::apps
