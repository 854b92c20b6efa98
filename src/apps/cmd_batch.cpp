// segmux batch MANIFEST --out DIR: the videos of a manifest tracked one after another with one model
// load, as one shard of a job array (Slurm, a Kubernetes Indexed Job). Every video is tracked by the
// same code as `segmux track` (track_video.h) into DIR/.staging/<id>/ and renamed to DIR/<id>/ when
// complete; the folder protocol (claims, failure records, summaries) is pipeline/batch/batch_folder.h.
//
// Exit codes for a scheduler: 0 every video of the shard is done, 3 some are permanently bad (recorded
// in DIR/.failed/), 75 (EX_TEMPFAIL) try again later (SIGTERM, a transient failure, a video held by
// another live process), 1 fatal (no model, no output folder, a bad manifest), 2 usage.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/cli.h"
#include "apps/commands.h"
#include "apps/format_options.h"
#include "apps/precision_option.h"
#include "apps/track_video.h"
#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "pipeline/batch/batch_folder.h"
#include "pipeline/batch/manifest.h"
#include "pipeline/batch/shard.h"
#include "verify/demo_model.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {
namespace {

namespace fs = std::filesystem;
using namespace segmux::pipeline;

constexpr int kExitDone = 0, kExitFatal = 1, kExitSomeFailed = 3, kExitTryAgain = 75;

std::atomic<bool> g_stop{false};  // lock-free: safe to store from a signal handler
extern "C" void on_stop_signal(int) { g_stop.store(true); }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// Fatal for the whole shard (the model cannot be loaded): no video is to blame.
class FatalError : public Error {
 public:
  using Error::Error;
};

struct BatchOptions {
  std::string manifest, out, shard_spec;
  std::optional<int> shard_count;
  ModelSource src;
  bool demo = false, json = false;
  TrackSettings track;  // the defaults of every video (a JSON line overrides some)
};

struct Counts {
  int done = 0, skipped = 0, failed = 0, failed_earlier = 0, busy = 0;
  long long frames = 0;
  std::vector<std::string> failed_ids;
  std::string stopped_by;  // why the shard stopped early: "SIGTERM", a transient error; "" when it did not
};

std::string now_utc() {
  char b[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string host_name() {
  char b[256] = {};
  if (gethostname(b, sizeof b - 1) != 0) return "?";
  return b;
}

TrackSettings settings_for(const BatchItem& item, const TrackSettings& defaults, const std::string& stage) {
  TrackSettings t = defaults;
  t.input = item.path;
  t.out_dir = stage;
  if (!item.prompts.empty()) t.prompts = item.prompts;
  if (item.start) t.start = *item.start;
  if (item.max_frames) t.max_frames = *item.max_frames;
  if (item.direction) t.direction = *item.direction;
  if (item.fps) t.folder_fps = *item.fps;
  t.video_id = item.line;
  t.json = false;
  t.stop = &g_stop;
  return t;
}

class BatchRun {
 public:
  BatchRun(const BatchOptions& o, BatchFolder& folder) : o_(o), folder_(folder) {}

  // Tracks one video of the shard (or says why not) and counts the outcome.
  void process(const BatchItem& item, int position, int total) {
    if (folder_.done(item.id)) return void(++counts_.skipped);
    if (folder_.failure(item.id)) {
      ++counts_.failed_earlier;
      counts_.failed_ids.push_back(item.id);
      return;
    }
    auto claim = folder_.claim(item.id);
    if (!claim) return void(folder_.done(item.id) ? ++counts_.skipped : ++counts_.busy);
    log("video " + std::to_string(position) + "/" + std::to_string(total) + " " + item.id + ": " + item.path);
    try {
      const TrackedVideo v = track_video(settings_for(item, o_.track, claim->stage()), model_getter());
      if (!claim->commit()) return void(++counts_.skipped);  // another process finished it first
      ++counts_.done;
      counts_.frames += v.frames;
      log("done " + item.id + ": " + std::to_string(v.frames) + " frames in " + seconds_text(v.seconds));
    } catch (const TrackInterrupted&) {
      counts_.stopped_by = "SIGTERM";
    } catch (const FatalError&) {
      throw;
    } catch (const std::bad_alloc&) {
      counts_.stopped_by = item.id + ": out of memory";
    } catch (const std::exception& e) {
      if (folder_.transient_failure(e.what())) {
        counts_.stopped_by = item.id + ": " + e.what();
        return;
      }
      folder_.record_failure(item.id, {{"id", item.id},
                                       {"path", item.path},
                                       {"manifest_line", item.line},
                                       {"reason", valid_utf8(e.what())},
                                       {"host", host_name()},
                                       {"time", now_utc()}});
      ++counts_.failed;
      counts_.failed_ids.push_back(item.id);
      log("failed " + item.id + ": " + e.what() + " (recorded in .failed/" + item.id + ".json, not retried)");
    }
  }

  const Counts& counts() const { return counts_; }
  void stop(const std::string& why) { counts_.stopped_by = why; }
  double model_seconds() const { return model_seconds_; }
  void log(const std::string& line) const {
    if (!o_.track.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  }
  static std::string seconds_text(double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f s", s);
    return b;
  }

 private:
  // The model, loaded at the first video that needs it (a rerun with nothing left loads nothing).
  // Every video runs in a fresh session of it (its own frame features and tracker memories).
  ModelGetter model_getter() {
    return [this](const LogFn& log) -> OpenedModel& {
      if (model_) return *model_;
      const auto t0 = std::chrono::steady_clock::now();
      ModelSource src = o_.src;
      try {
        if (o_.demo) src.model_dir = verify::ensure_demo_model(src.cache_dir, log);
        model_ = open_model(src, log);
      } catch (const std::bad_alloc&) {
        throw;
      } catch (const std::exception& e) {
        throw FatalError(std::string("cannot load the model: ") + e.what());
      }
      model_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      log("model: " + model_->description + (src.engine == "ort" ? " on ONNX Runtime" : "") + " (loaded in " +
          seconds_text(model_seconds_) + ", once for the shard)");
      return *model_;
    };
  }

  const BatchOptions& o_;
  BatchFolder& folder_;
  Counts counts_;
  std::optional<OpenedModel> model_;
  double model_seconds_ = 0;
};

int exit_code(const Counts& c) {
  if (!c.stopped_by.empty() || c.busy > 0) return kExitTryAgain;
  if (c.failed + c.failed_earlier > 0) return kExitSomeFailed;
  return kExitDone;
}

nlohmann::json summary_json(const BatchOptions& o, const Shard& shard, const BatchRun& run, int videos,
                            double seconds) {
  const Counts& c = run.counts();
  return {{"shard", shard.describe()},
          {"manifest", o.manifest},
          {"out", o.out},
          {"host", host_name()},
          {"pid", getpid()},
          {"finished", now_utc()},
          {"videos", videos},
          {"done", c.done},
          {"skipped", c.skipped},
          {"failed", c.failed},
          {"failed_earlier", c.failed_earlier},
          {"failed_ids", c.failed_ids},
          {"busy", c.busy},
          {"stopped_by", c.stopped_by},
          {"frames", c.frames},
          {"seconds", seconds},
          {"seconds_model_load", run.model_seconds()},
          {"frames_per_second", seconds > 0 ? double(c.frames) / seconds : 0.0},
          {"exit_code", exit_code(c)}};
}

int run_shard(const BatchOptions& o, const Shard& shard) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<BatchItem> items = read_manifest(o.manifest);
  for (const auto& item : items)
    SEGMUX_USAGE_CHECK(!item.prompts.empty() || !o.track.prompts.empty(), o.manifest, " line ", item.line,
                       ": no prompt for '", item.id, "': give --prompt TEXT or \"prompts\" in a JSON line");
  BatchFolder folder(o.out);
  BatchRun run(o, folder);
  std::vector<const BatchItem*> mine;
  for (size_t i = 0; i < items.size(); ++i)
    if (shard.contains(i)) mine.push_back(&items[i]);
  run.log("shard " + shard.describe() + ": " + std::to_string(mine.size()) + " of " + std::to_string(items.size()) +
          " videos, into " + o.out);
  for (size_t k = 0; k < mine.size() && run.counts().stopped_by.empty(); ++k) {
    if (g_stop.load()) {
      run.stop("SIGTERM");
      break;
    }
    run.process(*mine[k], int(k + 1), int(mine.size()));
  }
  folder.tidy();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const nlohmann::json summary = summary_json(o, shard, run, int(mine.size()), secs);
  folder.write_summary(shard, summary);
  const Counts& c = run.counts();
  char line[256];
  std::snprintf(line, sizeof line, "shard %s: %d done, %d skipped, %d failed, %d busy in %.1f s (%.2f frames/s)",
                shard.describe().c_str(), c.done, c.skipped, c.failed + c.failed_earlier, c.busy, secs,
                summary["frames_per_second"].get<double>());
  run.log(std::string(line) + (c.stopped_by.empty() ? "" : "; stopped: " + c.stopped_by + " (exit 75: try again)"));
  if (o.json) std::printf("%s\n", json_text(summary, 2).c_str());
  return exit_code(c);
}

constexpr const char* kFooter = R"(
MANIFEST: one video per line, a path (id = the file name without its extension) or a JSON object:
  {"id": "clip7", "path": "videos/clip7.mp4", "prompts": ["dog", "cat"], "start": 0, "max_frames": 100,
   "direction": "forward", "fps": 25}
  (relative paths are taken from the manifest's folder; '#' starts a comment line)
Outputs: DIR/<id>/ as `segmux track` writes them (renamed into place when complete: present = done,
  skipped on a rerun); DIR/.failed/<id>.json for a permanently bad video (not retried);
  DIR/.summary/shard-I-of-N.json per shard (done, skipped, failed, seconds, frames/s).
Exit: 0 all done, 3 some videos permanently failed, 75 try again (SIGTERM, transient failure),
  1 fatal, 2 usage.
Examples:
  segmux batch videos.txt --prompt person --model pkg/ --out out/ --shard 0/4
  sbatch --array=0-15 deploy/slurm/segmux-batch.sbatch   (--shard auto; docs/scale.md)
Details: docs/scale.md)";

void add_options(CLI::App& app, BatchOptions& o) {
  TrackSettings& t = o.track;
  t.overlay = "auto";
  app.add_option("manifest", o.manifest, "text file: a video path or a JSON object per line")->required();
  app.add_option("-o,--out,--output", o.out, "output folder: DIR/<id>/ per video (created if absent)")->required();
  app.add_option("--shard", o.shard_spec,
                 "I/N: this process takes videos I, I+N, ... (from 0); auto: from SLURM_ARRAY_TASK_ID/COUNT or "
                 "JOB_COMPLETION_INDEX (default: every video)");
  app.add_option("--shard-count", o.shard_count, "number of shards (a Kubernetes Indexed Job's completions)");
  app.add_option("--prompt,-p", t.prompts, "text prompt of every video without its own \"prompts\" (repeatable)");
  auto* w = app.add_option("--weights", o.src.weights, "SAM 3.1 checkpoint; compiled on first use");
  app.add_option("--config", o.src.config, "model config JSON (default: full-size SAM 3.1)")->needs(w);
  o.src.read_config = verify::load_model_or_fixture_config;  // a fixture's config.json too
  app.add_option("--vocab", o.src.vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  auto* m =
      app.add_option("--model", o.src.model_dir, "deployment package (segmux deploy) or compiled folder")->excludes(w);
  app.add_flag("--demo", o.demo, "built-in tiny random-weight model (masks are meaningless)")->excludes(w)->excludes(m);
  app.add_option("--cache-dir", o.src.cache_dir, "where compiled candidates are cached (default ~/.cache/segmux)");
  app.add_option("--engine", o.src.engine, "smx (default) or ort")->check(CLI::IsMember({"smx", "ort"}));
  app.add_option("--start", t.start, "frame to prompt and start from (default 0)")->check(CLI::NonNegativeNumber);
  app.add_option("--max-frames", t.max_frames, "frames per direction, the prompted one included (default: all)")
      ->check(CLI::PositiveNumber);
  app.add_option("--direction", t.direction, "forward (default), backward or both")
      ->check(CLI::IsMember({"forward", "backward", "both"}));
  app.add_option("--overlay", t.overlay, "auto (DIR/<id>/overlay.mp4, .gif for GIF input; default) or none")
      ->check(CLI::IsMember({"auto", "none"}));
  app.add_option("--masks", t.masks, "ids (default), color or none")->check(CLI::IsMember({"ids", "color", "none"}));
  app.add_option("--rle", t.rle, "compressed (default) or uncompressed")
      ->check(CLI::IsMember({"compressed", "uncompressed"}));
  app.add_option("--fps", t.folder_fps, "frame rate of frame folders")->check(CLI::PositiveNumber);
  add_format_options(app, t, false);  // ytvis_results.json's video_id: the video's manifest line
  add_threads_option(app, o.src.num_threads, "CPU threads");
  add_precision_option(app, o.src.precision, "fp32 or bf16: how a --weights checkpoint is compiled");
  app.add_flag("--quiet,-q", t.quiet, "no progress output");
  app.add_flag("--json", o.json, "print the shard's summary as JSON on stdout");
}

int run_batch(int argc, char** argv) {
  CLI::App app{"Track the videos of a manifest (one shard of a job array) with one model load.", "segmux batch"};
  app.footer(kFooter);
  BatchOptions o;
  add_options(app, o);
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(!o.src.weights.empty() || !o.src.model_dir.empty() || o.demo,
                     "no model: give --weights CHECKPOINT, --model DIR or --demo");
  check_precision_use(app, o.src);
  for (const auto& p : o.track.prompts) SEGMUX_USAGE_CHECK(!p.empty(), "--prompt is empty");
  o.track.engine = o.src.engine;
  Shard shard;
  try {
    if (!o.shard_spec.empty()) shard = parse_shard(o.shard_spec, process_environment(), o.shard_count);
  } catch (const Error& e) {
    usage_fail(e.what());
  }
  SEGMUX_USAGE_CHECK(!o.shard_count || !o.shard_spec.empty(), "--shard-count goes with --shard");
  install_stop_handlers();
  try {
    return run_shard(o, shard);
  } catch (const UsageError&) {
    throw;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "segmux: error: batch: out of memory (exit 75: try again)\n");
    return kExitTryAgain;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segmux: error: batch: %s\n", e.what());
    return kExitFatal;
  }
}

CommandRegistration reg("batch", "track the videos of a manifest as one shard of a Slurm / Kubernetes job array",
                        run_batch);

}  // namespace
}  // namespace segmux::apps
