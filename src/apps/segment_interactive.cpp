#include "apps/segment_interactive.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/cli.h"
#include "apps/prompt_args.h"
#include "apps/staged_output.h"
#include "core/error.h"
#include "io/files.h"
#include "io/npy.h"
#include "io/printable.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/tracks_json.h"
#include "pipeline/predictor/image_predictor.h"
#include "verify/demo_model.h"

namespace segmux::apps {

namespace fs = std::filesystem;
using namespace segmux::pipeline;

void add_interactive_options(CLI::App& app, InteractiveSegmentArgs& a) {
  app.add_option("--point", a.points,
                 "interactive predictor: a click x,y[:neg] in pixels (repeatable; :neg = background)");
  app.add_flag("--multimask", a.multimask,
               "interactive predictor: three candidate masks with their scores (official multimask_output)");
  app.add_option("--mask-input", a.mask_input,
                 "interactive predictor: low-res logits .npy from a previous --logits-out (official mask_input)");
  app.add_option("--mask-input-index", a.mask_input_index,
                 "which mask of a --mask-input file holding several (default: the file holds one)");
  app.add_option("--logits-out", a.logits_out,
                 "interactive predictor, one image: write the low-res logits (C, Hm, Wm) .npy to feed back");
  app.add_flag("--return-logits", a.return_logits,
               "interactive predictor: also write STEM.logits.npy, the mask logits at the image size");
  app.add_flag("--interactive", a.interactive,
               "the interactive (SAM-1-style) predictor even with a --box alone (implied by the options above)");
}

bool interactive_requested(const InteractiveSegmentArgs& a) {
  return a.interactive || !a.points.empty() || a.multimask || !a.mask_input.empty() || !a.logits_out.empty() ||
         a.return_logits || a.mask_input_index >= 0;
}

namespace {

// The (1, Hm, Wm) mask input from a .npy file: one mask, or mask `index` of several.
Tensor read_mask_input(const std::string& path, int index) {
  Tensor t = read_npy(path);
  SEGMUX_CHECK(t.dtype() == DType::f32, "--mask-input ", path, ": float32 logits expected, not ",
               dtype_name(t.dtype()));
  SEGMUX_CHECK(t.rank() == 2 || t.rank() == 3, "--mask-input ", path, " has shape ", shape_str(t.shape()),
               "; expected (Hm, Wm), (1, Hm, Wm) or (C, Hm, Wm) with --mask-input-index");
  if (t.rank() == 2) t = t.reshaped({1, t.dim(0), t.dim(1)});
  const int64_t c = t.dim(0), plane = t.dim(1) * t.dim(2);
  if (index < 0) {
    SEGMUX_CHECK(c == 1, "--mask-input ", path, " holds ", c, " masks: choose one with --mask-input-index");
    return t.clone();
  }
  SEGMUX_CHECK(index < c, "--mask-input-index ", index, " but ", path, " holds ", c, " masks");
  Tensor one(DType::f32, {1, t.dim(1), t.dim(2)});
  std::copy_n(t.data<float>() + size_t(index) * size_t(plane), size_t(plane), one.data<float>());
  return one;
}

ImagePrompt make_prompt(const InteractiveSegmentArgs& a, const std::vector<std::string>& boxes,
                        const Tensor& mask_input) {
  ImagePrompt p;
  for (const auto& s : a.points) {
    const PointArg q = parse_point_arg(s);
    p.points.push_back({q.x, q.y});
    p.labels.push_back(q.positive ? 1 : 0);
  }
  SEGMUX_USAGE_CHECK(boxes.size() <= 1, "the interactive predictor takes one --box, not ", boxes.size());
  if (!boxes.empty()) {
    const BoxArg b = parse_box_arg(boxes[0]);
    SEGMUX_USAGE_CHECK(b.positive, "--box ", boxes[0], ": a prompt box cannot be negative (:neg is for exemplars)");
    p.box = std::array<float, 4>{b.x, b.y, b.x + b.w, b.y + b.h};
  }
  p.mask_input = mask_input;
  p.multimask_output = a.multimask;
  p.return_logits = a.return_logits;
  return p;
}

void write_mask_png(const std::string& path, const BinaryMask& m) {
  std::vector<uint16_t> v(m.pixels.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = m.pixels[i] ? 255 : 0;
  write_png_gray(path, m.width, m.height, v, false);
}

// Writes STEM.json, STEM.mask<K>.png (and STEM.logits.npy); returns the names written.
std::vector<std::string> write_prediction(const std::string& dir, const std::string& stem, const std::string& source,
                                          const ImagePrediction& r, const ImagePrompt& p) {
  std::vector<std::string> names = {stem + ".json"};
  std::vector<BinaryMask> masks = r.masks;
  if (p.return_logits) {  // the binary masks too, from the logits (official: > mask_threshold)
    const size_t plane = size_t(r.width) * size_t(r.height);
    for (size_t c = 0; c < r.scores.size(); ++c) {
      BinaryMask m;
      m.width = r.width;
      m.height = r.height;
      m.pixels.resize(plane);
      for (size_t i = 0; i < plane; ++i) m.pixels[i] = r.logits.data<float>()[c * plane + i] > 0.0f;
      masks.push_back(std::move(m));
    }
    write_npy(dir + "/" + stem + ".logits.npy", r.logits);
    names.push_back(stem + ".logits.npy");
  }
  nlohmann::json cands = nlohmann::json::array();
  for (size_t c = 0; c < masks.size(); ++c) {
    const std::string png = stem + ".mask" + std::to_string(c) + ".png";
    write_mask_png(dir + "/" + png, masks[c]);
    names.push_back(png);
    cands.push_back({{"index", c},
                     {"score", round_decimals(r.scores[c], 6)},
                     {"area", masks[c].area()},
                     {"png", png},
                     {"mask_rle", mask_rle_json(masks[c], RleForm::compressed)}});
  }
  const size_t best = size_t(std::max_element(r.scores.begin(), r.scores.end()) - r.scores.begin());
  nlohmann::json pts = nlohmann::json::array();
  for (size_t i = 0; i < p.points.size(); ++i) pts.push_back({p.points[i][0], p.points[i][1], p.labels[i]});
  nlohmann::json j = {{"format", "segmux-image-predict-1"},
                      {"source", valid_utf8(source)},
                      {"width", r.width},
                      {"height", r.height},
                      {"points_xy_label", pts},
                      {"box_xyxy", p.box ? nlohmann::json(*p.box) : nlohmann::json(nullptr)},
                      {"mask_input", p.mask_input.defined()},
                      {"multimask_output", p.multimask_output},
                      {"score", "predicted IoU of each candidate (official predict's second output)"},
                      {"rle", rle_form_description(RleForm::compressed)},
                      {"best", best},
                      {"candidates", cands}};
  const std::string text = json_text(j) + "\n";
  write_file_atomic(dir + "/" + stem + ".json", text.data(), text.size());
  return names;
}

}  // namespace

int run_interactive_segment(const std::vector<std::string>& images, const std::vector<std::string>& boxes,
                            const std::string& out_dir, ModelSource src, bool demo, bool quiet, bool json,
                            const InteractiveSegmentArgs& a) {
  SEGMUX_USAGE_CHECK(a.logits_out.empty() || images.size() == 1, "--logits-out takes one image, not ", images.size());
  SEGMUX_USAGE_CHECK(a.mask_input_index < 0 || !a.mask_input.empty(), "--mask-input-index without --mask-input");
  std::set<std::string> stems;
  for (const auto& path : images)
    SEGMUX_USAGE_CHECK(stems.insert(fs::path(path).stem().string()).second, "two images named '",
                       fs::path(path).stem().string(), "': their outputs would collide (" + path + ")");
  for (const auto& path : images) SEGMUX_CHECK(fs::is_regular_file(path), "cannot read image '", path, "': not a file");
  const Tensor mask_input = a.mask_input.empty() ? Tensor() : read_mask_input(a.mask_input, a.mask_input_index);
  const ImagePrompt prompt = make_prompt(a, boxes, mask_input);
  auto log = [&](const std::string& s) {
    if (!quiet) std::fprintf(stderr, "%s\n", s.c_str());
  };
  // The prompt against every image before the model loads (the mask size is the model's: checked below).
  for (const auto& path : images) {
    const RgbImage img = read_image(path);
    ImagePrompt shape_free = prompt;
    shape_free.mask_input = Tensor();
    if (std::string e = image_prompt_error(shape_free, img.width, img.height, 0);
        !e.empty() && !(e.rfind("no prompt", 0) == 0 && mask_input.defined()))
      fail(path, ": ", e);
  }
  if (demo) src.model_dir = verify::ensure_demo_model(src.cache_dir, log);
  OpenedModel model = open_model(src, log);
  log("model: " + model.description);
  ImagePredictor pred(*model.model);

  StagedOutput staged(out_dir);
  std::vector<std::string> written;
  nlohmann::json summary = nlohmann::json::array();
  Tensor low_res;  // the last image's low-res logits (--logits-out takes one image)
  for (const auto& path : images) {
    const std::string stem = fs::path(path).stem().string();
    pred.set_image(read_image(path));
    const ImagePrediction r = pred.predict(prompt);
    for (auto& n : write_prediction(staged.stage(), stem, path, r, prompt)) written.push_back(n);
    low_res = r.low_res_logits;
    log(path + ": " + std::to_string(r.scores.size()) + " candidate masks");
    summary.push_back({{"image", valid_utf8(path)}, {"json", (fs::path(out_dir) / (stem + ".json")).string()}});
  }
  staged.commit(written);
  if (!a.logits_out.empty()) write_npy(a.logits_out, low_res);  // atomic
  if (json) std::printf("%s\n", json_text({{"images", summary}, {"out", out_dir}}, 2).c_str());
  return 0;
}

}  // namespace segmux::apps
