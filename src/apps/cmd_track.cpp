// segmux track INPUT --prompt TEXT --out DIR: text-prompted video segmentation end to end.
//
// Outputs (formats: src/pipeline/outputs.h, docs/track.md) are written into a staging folder
// DIR/.partial-<pid> and moved into DIR only when every frame is done, so a failure (bad input, a
// corrupt frame in the middle of a video, a full disk) leaves DIR as it was. Frames reach the writer
// in ascending frame order: a forward run streams; backward/both runs spool each frame's objects
// (RLE masks, boxes, scores) to an anonymous temporary file and write them out in order at the end,
// so memory does not grow with the video's length.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/format_options.h"
#include "apps/precision_option.h"
#include "apps/request_plan.h"
#include "apps/staged_output.h"
#include "apps/track_live.h"
#include "apps/track_options.h"
#include "apps/track_video.h"
#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "io/files.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/outputs.h"
#include "pipeline/predictor/box_prompts.h"
#include "pipeline/predictor/concepts.h"
#include "verify/demo_model.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {
namespace {

namespace fs = std::filesystem;
using namespace segmux::pipeline;

// A one-line progress bar with ETA on a terminal; a plain line every 10 frames otherwise.
class Progress {
 public:
  Progress(int total, bool quiet) : total_(total), quiet_(quiet), tty_(isatty(2)) {}
  void update(int done, int frame_index) {
    if (quiet_) return;
    // The rate is measured from the first frame written on: the time before it (model start, the hot
    // start's delay before any output) is no measure of the rest, and made the first ETA far too long.
    const clock::time_point now = clock::now();
    if (first_done_ < 0) first_done_ = done, first_time_ = now;
    const int since_first = done - first_done_;
    const double per = since_first > 0 ? std::chrono::duration<double>(now - first_time_).count() / since_first : 0;
    const std::string eta = since_first > 0 ? fmt(per * std::max(0, total_ - done)) : std::string("--:--");
    if (tty_) {
      int width = 30, filled = total_ > 0 ? std::min(width, width * done / total_) : width;
      std::fprintf(stderr, "\r[%.*s%*s] %d/%d frames  %.2f s/frame  ETA %s   ", filled,
                   "##############################", width - filled, "", done, total_, per, eta.c_str());
      open_line_ = true;
      if (done >= total_) end_line();
    } else if (done == total_ || done % 10 == 0) {
      std::fprintf(stderr, "frame %d (%d/%d), %.2f s/frame, ETA %s\n", frame_index, done, total_, per, eta.c_str());
    }
  }
  // Ends the bar's line when the run stopped short of the planned count.
  void end_line() {
    if (open_line_) std::fprintf(stderr, "\n");
    open_line_ = false;
  }

 private:
  using clock = std::chrono::steady_clock;
  static std::string fmt(double s) {
    char b[32];
    int t = int(s + 0.5);
    std::snprintf(b, sizeof b, "%d:%02d", t / 60, t % 60);
    return b;
  }
  int total_;
  bool quiet_, tty_, open_line_ = false;
  int first_done_ = -1;  // frames done at the first update, and when
  clock::time_point first_time_;
};

// Frame outputs kept on disk (one JSON line each, masks as RLE) until they can be written in order.
class Spool {
 public:
  Spool() : file_(std::tmpfile()) { SEGMUX_CHECK(file_ != nullptr, "cannot create a temporary file"); }
  ~Spool() { std::fclose(file_); }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  void put(const FrameOutput& out) {
    nlohmann::json rles = nlohmann::json::array();
    for (const auto& m : out.masks) rles.push_back(rle_encode(m).counts);
    nlohmann::json j = {{"ids", out.obj_ids},
                        {"probs", out.probs},
                        {"boxes", out.boxes_xywh},
                        {"rles", rles},
                        {"prompts", out.prompts},
                        {"tracked", out.stats.num_obj_tracked},
                        {"dropped", out.stats.num_obj_dropped}};
    std::string line = json_text(j);
    SEGMUX_CHECK(std::fseek(file_, 0, SEEK_END) == 0, "temporary file: seek failed");
    long at = std::ftell(file_);
    SEGMUX_CHECK(at >= 0 && std::fwrite(line.data(), 1, line.size(), file_) == line.size(),
                 "cannot write to the temporary file (disk full?)");
    where_[out.frame_index] = {at, line.size()};
  }
  std::vector<int> frames() const {
    std::vector<int> f;
    for (const auto& [index, place] : where_) f.push_back(index);
    return f;
  }
  FrameOutput get(int frame_index, int width, int height) {
    auto [at, size] = where_.at(frame_index);
    std::string line(size, '\0');
    SEGMUX_CHECK(std::fseek(file_, at, SEEK_SET) == 0 && std::fread(line.data(), 1, size, file_) == size,
                 "cannot read back the temporary file");
    nlohmann::json j = nlohmann::json::parse(line);
    FrameOutput out;
    out.frame_index = frame_index;
    out.obj_ids = j["ids"].get<std::vector<int64_t>>();
    out.probs = j["probs"].get<std::vector<float>>();
    out.boxes_xywh = j["boxes"].get<std::vector<std::array<float, 4>>>();
    for (const auto& counts : j["rles"]) {
      RleMask r{height, width, counts.get<std::vector<int64_t>>()};
      out.masks.push_back(rle_decode(r));
    }
    out.stats.num_obj_tracked = j["tracked"];
    out.stats.num_obj_dropped = j["dropped"];
    out.prompts = j["prompts"].get<std::vector<std::string>>();
    return out;
  }

 private:
  FILE* file_;
  std::map<int, std::pair<long, size_t>> where_;
};

constexpr const char* kFooter = R"(
Examples:
  segmux track video.mp4 --prompt "dog" --weights sam3.1_multiplex.pt --out out/dog
  segmux track frames/ --prompt "person" --model compiled/ --out out/p --direction both --start 40
  segmux track clip.gif --prompt "shape" --demo --out out/demo
  segmux track video.mp4 --prompt dog --prompt cat --model compiled/ --out out/pets   (every concept at once)
  segmux track video.mp4 --requests requests.json --model compiled/ --out out/r       (official-style requests)

Outputs in DIR (written when the run completes; a failed run leaves DIR as it was):
  masks/NNNNN.png  16-bit grayscale per frame: 0 = background, obj_id + 1 on the object's pixels
                   (looks black in image viewers: --masks color adds masks_color/NNNNN.png to look at)
  tracks.json      per frame (ascending frame index): time, object ids, scores, boxes, COCO RLE masks
                   (pycocotools' compressed string counts; --rle uncompressed for lists of runs)
  overlay.mp4      frames with coloured masks, boxes and ids (overlay.gif for GIF input)
--max-frames N counts frames per direction including the prompted frame (both: up to 2N-1 frames).
The first use of a checkpoint compiles it (minutes at full size) into --cache-dir; later runs reuse it.
Details: docs/track.md)";

int run_track(int argc, char** argv) {
  CLI::App app{
      "Segment and track every object matching a text prompt through a video.\n"
      "INPUT is a video file (MP4/MOV/WebM/...), an animated GIF, a folder of frames, or live: - (standard input),\n"
      "a stream URL (rtsp://, http://, HLS) or a capture device (v4l2:/dev/video0), tracked as frames arrive.",
      "segmux track"};
  app.footer(kFooter);
  TrackSettings s;
  std::string &input = s.input, &out_dir = s.out_dir, &direction = s.direction, &overlay = s.overlay;
  std::vector<std::string>& prompts = s.prompts;
  TrackPromptOptions& popt = s.popt;
  ModelSource src;
  bool demo = false;
  int &start = s.start, &max_frames = s.max_frames;
  bool &quiet = s.quiet, &json = s.json, &no_masks = s.no_masks;
  std::string &rle = s.rle, &masks = s.masks;
  double& folder_fps = s.folder_fps;
  app.add_option("input", input,
                 "video file, GIF or frame folder; live: - (standard input), a stream URL (rtsp://, http://, ...) or "
                 "a capture device (v4l2:/dev/video0)")
      ->required();
  app.add_option("--prompt,-p", prompts, "text prompt, e.g. \"dog\" (repeatable: every concept is tracked at once)");
  add_track_prompt_options(app, popt);
  app.add_option("-o,--out,--output", out_dir, "output folder (created if absent)")->required();
  auto* w = app.add_option("--weights", src.weights,
                           "SAM 3.1 checkpoint (sam3.1_multiplex.pt or .safetensors); compiled on first use");
  app.add_option("--config", src.config, "model config JSON (default: full-size SAM 3.1)")->needs(w);
  src.read_config = verify::load_model_or_fixture_config;  // a fixture's config.json too
  app.add_option("--vocab", src.vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  auto* m = app.add_option("--model", src.model_dir,
                           "deployment package (segmux deploy) or folder of compiled candidates with model.json")
                ->excludes(w);
  app.add_flag("--demo", demo, "built-in tiny random-weight model: shows the machinery, masks are meaningless")
      ->excludes(w)
      ->excludes(m);
  app.add_option("--cache-dir", src.cache_dir, "where compiled candidates are cached (default ~/.cache/segmux)");
  app.add_option("--engine", src.engine,
                 "smx (default: our runtime on the .smx files) or ort (ONNX Runtime on the package's onnx/ files; "
                 "with --weights they are exported into the cache on first use)")
      ->check(CLI::IsMember({"smx", "ort"}));
  app.add_option("--start", start, "frame to prompt and start from (default 0)");
  app.add_option("--max-frames", max_frames, "frames per direction, the prompted one included (default: all)");
  app.add_option("--direction", direction,
                 "both (default, as the official propagate_in_video: forward, then backward from the start frame), "
                 "forward or backward")
      ->check(CLI::IsMember({"forward", "backward", "both"}));
  app.add_option("--overlay", overlay,
                 "overlay file (.gif/.mp4/...), 'auto' (DIR/overlay.mp4, .gif for GIF input) or 'none'");
  app.add_option("--masks", masks,
                 "per-frame mask PNGs: ids (16-bit id PNGs, default), color (also indexed-colour PNGs to look at "
                 "in masks_color/) or none")
      ->check(CLI::IsMember({"ids", "color", "none"}));
  app.add_flag("--no-masks", no_masks, "same as --masks none");
  app.add_option("--rle", rle, "tracks.json mask form: compressed (COCO string counts, default) or uncompressed")
      ->check(CLI::IsMember({"compressed", "uncompressed"}));
  app.add_option("--fps", folder_fps, "frame rate of a frame folder (gives tracks.json timestamps)")
      ->check(CLI::PositiveNumber);
  add_format_options(app, s);
  LiveTrackOptions live;
  add_live_options(app, live);
  add_threads_option(app, src.num_threads, "CPU threads");
  add_precision_option(app, src.precision, kCheckpointPrecisionHelp);
  app.add_flag("--quiet,-q", quiet, "no progress output");
  app.add_flag("--json", json, "print a JSON summary on stdout");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(!src.weights.empty() || !src.model_dir.empty() || demo,
                     "no model: give --weights CHECKPOINT, --model DIR or --demo");
  check_track_prompt_options(popt, prompts);
  check_precision_use(app, src);
  SEGMUX_USAGE_CHECK(
      popt.requests.empty() || app.count("--start") + app.count("--direction") + app.count("--max-frames") == 0,
      "--requests replaces --start, --direction and --max-frames (say them in the requests)");
  SEGMUX_USAGE_CHECK(max_frames == -1 || max_frames >= 1, "--max-frames ", max_frames, " must be at least 1");
  s.engine = src.engine;
  std::optional<OpenedModel> opened;
  const ModelGetter get_model = [&](const LogFn& log) -> OpenedModel& {
    if (demo) src.model_dir = verify::ensure_demo_model(src.cache_dir, log);
    opened = open_model(src, log);
    if (demo) opened->description = "built-in demo model (random weights: masks are meaningless) in " + src.model_dir;
    log("model: " + opened->description + (src.engine == "ort" ? " on ONNX Runtime" : ""));
    return *opened;
  };
  if (is_live_input(input))
    track_live(s, live, get_model);  // "-", a URL or a capture device (track_live.h)
  else
    track_video(s, get_model);
  return 0;
}

CommandRegistration reg("track", "segment and track objects named by a text prompt through a video", run_track);

}  // namespace

TrackedVideo track_video(const TrackSettings& s, const ModelGetter& get_model) {
  // The option names of `segmux track`, so the messages below speak of what the user typed.
  const std::string &input = s.input, &out_dir = s.out_dir, &direction = s.direction, &overlay = s.overlay;
  std::vector<std::string> prompts = s.prompts;
  const TrackPromptOptions& popt = s.popt;
  const int start = s.start, max_frames = s.max_frames;
  const bool quiet = s.quiet, json = s.json, no_masks = s.no_masks;
  std::string masks = s.masks;
  const std::string& rle = s.rle;
  const double folder_fps = s.folder_fps;
  auto log = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };

  // Everything that can be checked before any output exists: formats, input, start frame, model.
  const std::vector<ExportFormat> formats = parse_export_formats(s.formats);
  auto reader = open_video(input, folder_fps);
  log("input: " + reader->describe());
  const int n = reader->num_frames();
  SEGMUX_USAGE_CHECK(start >= 0 && start < n, "--start ", start, " is outside the video (", n, " frames: 0..", n - 1,
                     ")");
  const std::vector<TrackRequest> requests =
      prepare_track_prompts(popt, prompts, start, direction, n, reader->width(), reader->height());
  const Prompt boxes = track_box_exemplars(popt, reader->width(), reader->height());
  const bool have_boxes = !boxes.boxes_xywh.empty();
  SEGMUX_USAGE_CHECK(!have_boxes || !popt.frame || *popt.frame == start,
                     "--box exemplars go on the --start frame: give --start ", popt.frame.value_or(0));
  if (prompts.empty() && have_boxes) prompts = {kBoxOnlyText};  // official: boxes alone
  OpenedModel& model = get_model(log);

  StagedOutput staged(out_dir);
  OutputOptions opt;
  if (no_masks) masks = "none";
  opt.write_masks = masks != "none";
  opt.color_masks = masks == "color";
  opt.rle = parse_rle_form(rle);
  opt.prompt = requests.empty() ? prompts.front() : "";
  opt.prompts = prompts;
  opt.source = input;
  opt.fps = reader->fps();
  opt.formats = formats;
  opt.export_context = {.video_id = s.video_id, .fps = opt.fps, .media_name = fs::path(input).filename().string()};
  std::string overlay_final;
  if (overlay == "auto") {
    std::string name = fs::path(input).extension() == ".gif" ? "overlay.gif" : "overlay.mp4";
    opt.overlay_path = staged.stage() + "/" + name;
    overlay_final = (fs::path(out_dir) / name).string();
  } else if (overlay != "none") {
    overlay_final = overlay;
    // An overlay inside the output folder is staged with the other outputs (written directly, the
    // commit would take it for a previous run's file and remove it); elsewhere the writer is atomic.
    std::error_code ec;
    const fs::path parent = fs::weakly_canonical(fs::absolute(overlay).parent_path(), ec);
    const bool inside_out = !ec && parent == fs::weakly_canonical(fs::absolute(out_dir), ec);
    opt.overlay_path = inside_out ? staged.stage() + "/" + fs::path(overlay).filename().string() : overlay;
  }
  TrackWriter writer(staged.stage(), reader->width(), reader->height(), opt);

  ControlConfig ccfg = control_config_for(model.config);
  if (is_image_file(input)) ccfg = for_single_image(ccfg);  // official is_image_only
  // Outputs are kept only for requests (a click or a removal answers with a frame's kept outputs):
  // a plain run's memory stays flat however long the video.
  SessionOptions sopt;
  sopt.keep_outputs = !requests.empty();
  VideoSession session(*model.model, *reader, ccfg, sopt);  // this video's own model session

  // propagate(start, k) covers start..start+k forward and start-1..start-k backward.
  const bool forward = direction != "backward", backward = direction != "forward";
  const int per_dir = max_frames < 0 ? n : max_frames;
  const int fwd_frames = forward ? std::min(per_dir, n - start) : 0;
  const int bwd_frames = backward ? std::min(per_dir, start + 1) : 0;
  const int planned = fwd_frames + bwd_frames - (forward && backward ? 1 : 0);

  Progress progress(requests.empty() ? planned : planned_outputs(requests, n), quiet);
  int done = 0;
  std::set<int> seen;
  std::map<int64_t, int> frames_per_object;
  std::unique_ptr<Spool> spool;
  if (backward || !requests.empty()) spool = std::make_unique<Spool>();  // outputs arrive out of frame order
  auto t0 = std::chrono::steady_clock::now();
  auto write = [&](const FrameOutput& out) {
    for (size_t k = 0; k < out.obj_ids.size(); ++k)
      if (out.masks[k].area() > 0) ++frames_per_object[out.obj_ids[k]];
    writer.add(reader->frame(out.frame_index), out, reader->time_s(out.frame_index));
  };
  // Requests may deliver a frame again (a later propagation's output replaces the earlier one).
  auto take = [&](const FrameOutput& out) {
    if (s.stop && s.stop->load()) throw TrackInterrupted("interrupted at frame " + std::to_string(out.frame_index));
    SEGMUX_CHECK(!requests.empty() || seen.insert(out.frame_index).second, "frame ", out.frame_index,
                 " was delivered twice by the predictor");
    if (spool)
      spool->put(out);
    else
      write(out);
    progress.update(++done, out.frame_index);
  };
  auto take_all = [&](const FrameOutput& out) {
    take(out);
    return true;
  };
  if (!requests.empty()) {
    for (const TrackRequest& q : requests) {
      run_track_requests(session, {q}, take);
      // The official remove_object response: that frame's last outputs without the object.
      if (q.type == TrackRequest::Type::RemoveObject)
        if (auto out = session.frame_outputs(q.frame_index)) take(*out);
    }
  } else {
    std::vector<FrameOutput> parts;
    for (const auto& text : prompts) {
      Prompt p = boxes;
      p.text = text;
      parts.push_back(session.add_prompt(start, p));
    }
    const FrameOutput prompted = ConceptSet::merge(std::move(parts));
    // Forward propagation re-delivers the prompted frame; backward starts below it. A one-frame input
    // gives the add_prompt outputs: propagation there hides every object (see docs/track.md).
    if (n == 1) {
      take(prompted);
    } else {
      if (!forward) take(prompted);
      if (forward) session.propagate({PropagationDirection::Forward, start, fwd_frames - 1}, take_all);
      if (backward && bwd_frames > 1)
        session.propagate({PropagationDirection::Backward, start, bwd_frames - 1}, take_all);
    }
  }
  progress.end_line();
  const double track_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (spool) {
    log("writing outputs in frame order");
    for (int f : spool->frames()) write(spool->get(f, reader->width(), reader->height()));
  }
  writer.finish();
  std::vector<std::string> outputs = {"masks", "masks_color", "tracks.json", "overlay.mp4", "overlay.gif"};
  for (const std::string& name : export_file_names()) outputs.push_back(name);
  staged.commit(outputs);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (json) {
    nlohmann::json objs = nlohmann::json::object();
    for (auto& [id, f] : frames_per_object) objs[std::to_string(id)] = f;
    nlohmann::json outputs = {{"tracks", (fs::path(out_dir) / "tracks.json").string()}};
    if (opt.write_masks) outputs["masks"] = (fs::path(out_dir) / "masks").string();
    if (opt.color_masks) outputs["masks_color"] = (fs::path(out_dir) / "masks_color").string();
    if (!overlay_final.empty()) outputs["overlay"] = overlay_final;
    nlohmann::json summary = {{"input", input},
                              {"prompt", prompts.empty() ? std::string() : prompts.front()},
                              {"prompts", prompts},
                              {"model", model.description},
                              {"engine", s.engine},
                              {"direction", direction},
                              {"start", start},
                              {"frames", writer.frames_written()},
                              {"objects", frames_per_object.size()},
                              {"objects_visible_frames", objs},
                              {"seconds", secs},
                              {"seconds_tracking", track_secs},
                              {"seconds_per_frame", done ? track_secs / done : 0.0},
                              {"out", out_dir},
                              {"outputs", outputs}};
    std::printf("%s\n", json_text(summary, 2).c_str());
  } else {
    log("wrote " + std::to_string(writer.frames_written()) + " frames, " + std::to_string(frames_per_object.size()) +
        " objects, to " + out_dir + (overlay_final.empty() ? "" : " (overlay " + overlay_final + ")"));
  }
  return TrackedVideo{writer.frames_written(), frames_per_object.size(), secs};
}
}  // namespace segmux::apps
