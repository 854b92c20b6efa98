#include "apps/track_live.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/staged_output.h"
#include "io/files.h"
#include "pipeline/media/live_source.h"
#include "pipeline/outputs/outputs.h"
#include "pipeline/predictor/box_prompts.h"
#include "pipeline/predictor/concepts.h"

namespace segmux::apps {

namespace fs = std::filesystem;
using namespace segmux::pipeline;

namespace {

std::atomic<bool> g_live_stop{false};
extern "C" void on_live_signal(int) { g_live_stop = true; }

// Latency of every frame: the figures of the summary, each frame's line in DIR/live_frames.jsonl.
class LatencyLog {
 public:
  explicit LatencyLog(const std::string& path) : file_(path) {}
  void add(int frame_index, const LiveFrame& f, double wait_s, double latency_s) {
    latencies_.push_back(float(latency_s));
    nlohmann::json j = {{"frame_index", frame_index},
                        {"stream_frame", f.number},
                        {"time_s", f.time_s ? nlohmann::json(*f.time_s) : nlohmann::json()},
                        {"queue_wait_s", round_decimals(wait_s, 6)},
                        {"latency_s", round_decimals(latency_s, 6)}};
    file_.write(j.dump() + "\n");
  }
  nlohmann::json summary() const {
    std::vector<float> v = latencies_;
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) { return v.empty() ? 0.0 : round_decimals(v[size_t(p * double(v.size() - 1))], 6); };
    return {{"p50", pct(0.5)}, {"p95", pct(0.95)}, {"max", v.empty() ? 0.0 : round_decimals(v.back(), 6)}};
  }
  void commit() { file_.commit(); }

 private:
  AtomicFile file_;
  std::vector<float> latencies_;  // 4 bytes a frame, for the percentiles
};

ControlConfig live_control_config(const OpenedModel& model) {
  // As track_video: the official settings sized to the model.
  ControlConfig c = default_control_config();
  c.multiplex_count = model.config.multiplex_count;
  c.bucket_capacity = model.config.multiplex_count;
  c.max_num_objects = model.config.max_num_objects;
  c.num_maskmem = model.config.num_maskmem;
  c.max_obj_ptrs_in_encoder = model.config.max_obj_ptrs_in_encoder;
  return c;
}

void check_live_settings(const TrackSettings& s) {
  SEGMUX_USAGE_CHECK(!s.prompts.empty(),
                     "a live input is tracked with --prompt TEXT (points, boxes and --requests "
                     "need a video file)");
  SEGMUX_USAGE_CHECK(s.popt.requests.empty() && s.popt.points.empty() && s.popt.boxes.empty(),
                     "a live input takes --prompt only (points, boxes and --requests need a video file)");
  SEGMUX_USAGE_CHECK(s.start == 0, "a live input starts at its first frame (no --start)");
  SEGMUX_USAGE_CHECK(s.direction != "backward", "a live input is tracked forward only");
}

}  // namespace

void add_live_options(CLI::App& app, LiveTrackOptions& o) {
  app.add_option("--live-policy", o.policy,
                 "when the model is slower than a live input: drop-oldest (default: track the newest frames), "
                 "drop-newest, or block (queue: drop nothing; the sender backs up)")
      ->check(CLI::IsMember({"drop-oldest", "drop-newest", "block"}));
  app.add_option("--live-queue", o.stream.queue_frames, "decoded frames waiting for the model (default 4)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--live-raw", o.stream.raw,
                 "standard input carries raw frames PIXFMT:WxH, e.g. rgb24:640x480 (default: a container stream)");
  app.add_option("--live-fps", o.stream.raw_fps, "frame rate of --live-raw frames (default 25)")
      ->check(CLI::PositiveNumber);
  app.add_option("--live-timeout", o.stream.timeout_s,
                 "seconds a network stream may stay silent (opening included) before the run ends with an error "
                 "(default 10)")
      ->check(CLI::PositiveNumber);
}

namespace {

// Ctrl-C / SIGTERM end a live run (its outputs are kept) while this object lives.
class StopOnSignal {
 public:
  StopOnSignal() : int_(std::signal(SIGINT, on_live_signal)), term_(std::signal(SIGTERM, on_live_signal)) {
    g_live_stop = false;
  }
  ~StopOnSignal() {
    std::signal(SIGINT, int_);
    std::signal(SIGTERM, term_);
  }

 private:
  void (*int_)(int);
  void (*term_)(int);
};

OutputOptions live_output_options(const TrackSettings& s, const LiveStream& stream, const std::string& stage) {
  OutputOptions opt;
  opt.write_masks = !s.no_masks && s.masks != "none";
  opt.color_masks = s.masks == "color";
  opt.rle = parse_rle_form(s.rle);
  opt.prompt = s.prompts.front();
  opt.prompts = s.prompts;
  opt.source = s.input;
  opt.fps = stream.fps();
  opt.formats = parse_export_formats(s.formats);
  opt.export_context = {.video_id = s.video_id, .fps = opt.fps, .media_name = s.input};
  if (s.overlay == "auto")
    opt.overlay_path = stage + "/overlay.mp4";
  else if (s.overlay != "none")
    opt.overlay_path = s.overlay;
  return opt;
}

// Frame t's outputs: the text prompts on the first frame, one propagation step on every later one.
FrameOutput track_frame(ConceptSet& predictor, const std::vector<std::string>& prompts, int t) {
  FrameOutput out;
  if (t == 0) {
    std::vector<FrameOutput> parts;
    for (const auto& p : prompts) parts.push_back(predictor.add_text_prompt(0, p, std::nullopt, {}));
    out = ConceptSet::merge(std::move(parts));
  } else {
    predictor.propagate(t, 0, false, [&](FrameOutput o) {
      out = std::move(o);
      return true;
    });
  }
  out.frame_index = t;
  return out;
}

void show_progress(const TrackSettings& s, int t, int done, size_t objects, double latency_s, int64_t dropped) {
  if (s.quiet) return;
  if (isatty(2))
    std::fprintf(stderr, "\rframe %d: %zu objects, latency %.3f s, dropped %lld   ", t, objects, latency_s,
                 static_cast<long long>(dropped));
  else if (done % 10 == 0)
    std::fprintf(stderr, "frame %d: %zu objects, latency %.3f s, dropped %lld\n", t, objects, latency_s,
                 static_cast<long long>(dropped));
}

}  // namespace

TrackedVideo track_live(const TrackSettings& s, LiveTrackOptions lo, const ModelGetter& get_model) {
  auto log = [&](const std::string& line) {
    if (!s.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };
  check_live_settings(s);
  parse_export_formats(s.formats);  // a usage error before the stream opens
  lo.stream.input = s.input;
  lo.stream.policy = parse_live_policy(lo.policy);
  LiveStream stream(lo.stream);
  log("input: " + stream.describe());
  OpenedModel& model = get_model(log);
  StopOnSignal stop_on_signal;

  StagedOutput staged(s.out_dir);
  TrackWriter writer(staged.stage(), stream.width(), stream.height(), live_output_options(s, stream, staged.stage()));
  LatencyLog latency(staged.stage() + "/live_frames.jsonl");
  LiveFrameSource frames(stream.width(), stream.height(), lo.keep_frames);
  const std::unique_ptr<ModelSession> session = model.model->new_session();  // this stream's tensors
  ConceptSet predictor(*session, frames, live_control_config(model));
  predictor.keep_decisions(false);  // a live run's decisions would grow without end
  std::map<int64_t, int> frames_per_object;
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  while (s.max_frames < 0 || done < s.max_frames) {
    std::optional<LiveFrame> f = stream.next(&g_live_stop);
    if (!f) break;
    const auto picked = std::chrono::steady_clock::now();
    const int t = frames.push(f->image.pixels.data(), f->image.width, f->image.height, 0);
    const FrameOutput out = track_frame(predictor, s.prompts, t);
    for (size_t k = 0; k < out.obj_ids.size(); ++k)
      if (out.masks[k].area() > 0) ++frames_per_object[out.obj_ids[k]];
    writer.add(f->image, out, f->time_s);
    const double latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - f->arrived).count();
    latency.add(t, *f, std::chrono::duration<double>(picked - f->arrived).count(), latency_s);
    show_progress(s, t, ++done, out.obj_ids.size(), latency_s, stream.dropped());
    if (g_live_stop) break;
  }
  if (!s.quiet && isatty(2)) std::fprintf(stderr, "\n");
  stream.stop();
  SEGMUX_CHECK(done > 0, "live input '", s.input, "': no frame arrived");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  writer.finish();
  latency.commit();
  const nlohmann::json stats = {
      {"input", s.input},
      {"policy", live_policy_name(lo.stream.policy)},
      {"queue_frames", lo.stream.queue_frames},
      {"frames_decoded", stream.decoded()},
      {"frames_dropped", stream.dropped()},
      {"frames_tracked", done},
      {"seconds", round_decimals(secs, 3)},
      {"latency_s", latency.summary()},
      {"stopped_by", g_live_stop ? "signal" : (done == s.max_frames ? "max-frames" : "end of stream")}};
  const std::string text = json_text(stats, 2) + "\n";
  write_file_atomic(staged.stage() + "/live_stats.json", text.data(), text.size());
  std::vector<std::string> ours = {"masks",       "masks_color",       "tracks.json",
                                   "overlay.mp4", "live_frames.jsonl", "live_stats.json"};
  for (const std::string& name : export_file_names()) ours.push_back(name);
  staged.commit(ours);
  if (s.json)
    std::printf("%s\n",
                json_text({{"live", stats}, {"objects", frames_per_object.size()}, {"out", s.out_dir}}, 2).c_str());
  else
    log("tracked " + std::to_string(done) + " live frames (" + std::to_string(stream.dropped()) +
        " dropped), latency p50 " + std::to_string(latency.summary()["p50"].get<double>()) + " s, to " + s.out_dir);
  return TrackedVideo{done, frames_per_object.size(), secs};
}

}  // namespace segmux::apps
