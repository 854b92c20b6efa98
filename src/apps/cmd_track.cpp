// segmux track INPUT --prompt TEXT --out DIR: text-prompted video segmentation end to end.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "core/error.h"
#include "pipeline/compiled_backend.h"
#include "pipeline/control_plane.h"
#include "pipeline/outputs.h"
#include "pipeline/video_io.h"

namespace segmux::apps {
namespace {

namespace fs = std::filesystem;
using namespace segmux::pipeline;

// A one-line progress bar with ETA on a terminal; plain lines otherwise.
class Progress {
 public:
  Progress(int total, bool quiet) : total_(total), quiet_(quiet), tty_(isatty(2)), start_(clock::now()) {}
  void update(int done, int frame_index) {
    if (quiet_) return;
    double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
    double per = done > 0 ? elapsed / done : 0;
    double eta = per * (total_ - done);
    if (tty_) {
      int width = 30, filled = total_ > 0 ? width * done / total_ : width;
      std::fprintf(stderr, "\r[%.*s%*s] %d/%d frames  %.2f s/frame  ETA %s   ", filled,
                   "##############################", width - filled, "", done, total_, per, fmt(eta).c_str());
      if (done == total_) std::fprintf(stderr, "\n");
    } else if (done == total_ || done % 10 == 0) {
      std::fprintf(stderr, "frame %d (%d/%d), %.2f s/frame, ETA %s\n", frame_index, done, total_, per, fmt(eta).c_str());
    }
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
  bool quiet_, tty_;
  clock::time_point start_;
};

int run_track(int argc, char** argv) {
  CLI::App app{"Segment and track every object matching a text prompt through a video.\n"
               "INPUT is a video file (MP4/MOV/WebM/...), an animated GIF or a folder of frames.",
               "segmux track"};
  std::string input, prompt, out_dir, direction = "forward", overlay = "auto";
  ModelSource src;
  int start = 0, max_frames = -1;
  bool quiet = false, json = false, no_masks = false;
  app.add_option("input", input, "video file, GIF or frame folder")->required();
  app.add_option("--prompt,-p", prompt, "text prompt, e.g. \"dog\"")->required();
  app.add_option("--out,-o", out_dir, "output folder")->required();
  auto* w = app.add_option("--weights", src.weights, "checkpoint (.pt or .safetensors); compiled on first use");
  app.add_option("--config", src.config, "model config JSON (default: full-size SAM 3.1)")->needs(w);
  app.add_option("--vocab", src.vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  auto* m = app.add_option("--model", src.model_dir, "folder of compiled candidates")->excludes(w);
  auto* d = app.add_flag("--demo", src.demo, "built-in tiny random-weight model (meaningless masks)")->excludes(w)->excludes(m);
  (void)d;
  app.add_option("--cache-dir", src.cache_dir, "where compiled candidates are cached (default ~/.cache/segmux)");
  app.add_option("--start", start, "frame to prompt and start from (default 0)");
  app.add_option("--max-frames", max_frames, "frames to track (default: all)");
  app.add_option("--direction", direction, "forward, backward or both")->check(CLI::IsMember({"forward", "backward", "both"}));
  app.add_option("--overlay", overlay, "overlay file (.gif/.mp4), 'auto' (DIR/overlay.mp4, .gif for GIF input) or 'none'");
  app.add_flag("--no-masks", no_masks, "do not write per-frame mask PNGs");
  app.add_option("--threads", src.num_threads, "CPU threads (default 2)");
  app.add_flag("--quiet,-q", quiet, "no progress output");
  app.add_flag("--json", json, "print a JSON summary on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEGMUX_CHECK(!src.weights.empty() || !src.model_dir.empty() || src.demo,
               "no model: give --weights CHECKPOINT, --model DIR or --demo");
  auto log = [&](const std::string& s) {
    if (!quiet) std::fprintf(stderr, "%s\n", s.c_str());
  };

  auto reader = open_video(input);
  log("input: " + reader->describe());
  SEGMUX_CHECK(start >= 0 && start < reader->num_frames(), "--start ", start, " is outside the video (",
               reader->num_frames(), " frames)");
  OpenedModel model = open_model(src, reader->num_frames(), log);
  log("model: " + model.description);

  OutputOptions opt;
  opt.write_masks = !no_masks;
  opt.prompt = prompt;
  opt.source = input;
  opt.fps = reader->fps();
  if (overlay == "auto")
    opt.overlay_path = out_dir + (fs::path(input).extension() == ".gif" ? "/overlay.gif" : "/overlay.mp4");
  else if (overlay != "none")
    opt.overlay_path = overlay;
  TrackWriter writer(out_dir, reader->width(), reader->height(), opt);

  ControlConfig ccfg = default_control_config();
  ccfg.multiplex_count = model.config.multiplex_count;
  ccfg.bucket_capacity = model.config.multiplex_count;
  ccfg.max_num_objects = model.config.max_num_objects;
  ccfg.num_maskmem = model.config.num_maskmem;
  ccfg.max_obj_ptrs_in_encoder = model.config.max_obj_ptrs_in_encoder;
  VideoControlPlane predictor(*model.backend, *reader, ccfg);

  const int n = reader->num_frames();
  int planned = direction == "forward" ? n - start : direction == "backward" ? start + 1 : n;
  if (max_frames >= 0) planned = std::min(planned, direction == "both" ? 2 * max_frames : max_frames);
  Progress progress(planned, quiet);
  int done = 0;
  std::map<int64_t, int> frames_per_object;
  auto t0 = std::chrono::steady_clock::now();
  auto sink = [&](FrameOutput out) {
    writer.add(reader->frame(out.frame_index), out);
    for (size_t k = 0; k < out.obj_ids.size(); ++k)
      if (out.masks[k].area() > 0) ++frames_per_object[out.obj_ids[k]];
    progress.update(++done, out.frame_index);
    return true;
  };
  predictor.add_text_prompt(start, prompt);
  if (direction == "forward" || direction == "both") predictor.propagate(start, max_frames, false, sink);
  if (direction == "backward" || direction == "both") predictor.propagate(start, max_frames, true, sink);
  writer.finish();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (json) {
    nlohmann::json objs = nlohmann::json::object();
    for (auto& [id, f] : frames_per_object) objs[std::to_string(id)] = f;
    nlohmann::json summary = {{"frames", writer.frames_written()},
                              {"seconds", secs},
                              {"seconds_per_frame", done ? secs / done : 0.0},
                              {"objects_visible_frames", objs},
                              {"out", out_dir}};
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    log("wrote " + std::to_string(writer.frames_written()) + " frames, " + std::to_string(frames_per_object.size()) +
        " objects, to " + out_dir + (opt.overlay_path.empty() ? "" : " (overlay " + opt.overlay_path + ")"));
  }
  return 0;
}

CommandRegistration reg("track", "segment and track objects named by a text prompt through a video", run_track);

}  // namespace
}  // namespace segmux::apps
