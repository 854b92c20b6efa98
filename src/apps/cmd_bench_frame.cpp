// segmux bench-frame --weights CKPT [--config C] --objects N [--precision fp32|bf16] [--threads T] [--peer ort]
//                    [--json]
//
// One steady-state tracked frame of the product path, candidate by candidate: the compiled backend the
// `track` command uses, N objects added through its mask-input path (what the control plane does for
// new detections) in one tracker state, then frames tracked until the memory bank is full (warm-up),
// then timed frames: backbone, detector, propagation decoder, memory encoder, each the median over the
// timed frames. Text features are computed once (cached, as in a session). Peak RSS (VmHWM) and the
// load average are reported with the figures, since the machine may be shared. With --peer ort, the
// candidate calls of the last timed frame are run again on our runtime and on ONNX Runtime, same
// inputs (bench_frame_peer.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/bench_frame_peer.h"
#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "apps/precision_option.h"
#include "deploy/model_store/engine_backend.h"
#include "deploy/model_store/model_store.h"
#include "pipeline/backends/ort_backend.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/predictor/multiplex.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {

namespace {

using namespace segmux::pipeline;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// VmHWM from /proc/self/status (falls back to getrusage's maxrss).
size_t vm_hwm_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return size_t(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
  return peak_rss_bytes();
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so that a compile on first use does not hide the
// tracking peak. False where the kernel refuses.
bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return (std::fclose(f) == 0) && ok;
}

std::vector<double> load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return {};
  return {l[0], l[1], l[2]};
}

// A smooth synthetic frame (gradients and a few discs), so that preprocessing sees image-like data.
RgbFrame synthetic_frame(int size, int index) {
  RgbFrame f;
  f.width = f.height = size;
  f.pixels.resize(size_t(size) * size_t(size) * 3);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      uint8_t* p = &f.pixels[(size_t(y) * size_t(size) + size_t(x)) * 3];
      p[0] = uint8_t((x * 255 / size + index * 7) & 255);
      p[1] = uint8_t((y * 255 / size) & 255);
      p[2] = uint8_t(((x + y) * 127 / size + 40) & 255);
    }
  return f;
}

// Object k: a disc on a grid of positions, at the tracker's mask-input size (u8, 1 inside).
Tensor object_masks(int n, int size) {
  Tensor t(DType::u8, {int64_t(n), int64_t(size), int64_t(size)});
  uint8_t* d = t.data<uint8_t>();
  std::fill(d, d + t.numel(), uint8_t(0));
  const int grid = int(std::ceil(std::sqrt(double(n))));
  const double cell = double(size) / grid, r = cell * 0.35;
  for (int k = 0; k < n; ++k) {
    const double cx = (k % grid + 0.5) * cell, cy = (k / grid + 0.5) * cell;
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r)
          d[(size_t(k) * size_t(size) + size_t(y)) * size_t(size) + size_t(x)] = 1;
  }
  return t;
}

struct FrameTimes {
  double backbone = 0, detector = 0, propagation = 0, memory_encoder = 0, total = 0;
};

void print_peer(const nlohmann::json& p) {
  std::printf(
      "  peer: ONNX Runtime on the exported ONNX, the last timed frame's calls (same inputs), %d threads,\n"
      "        medians of %d run(s) after %d warm-up; ratio = segmux / ort (below 1: segmux is faster)\n",
      p["threads"].get<int>(), p["iters"].get<int>(), p["warmup"].get<int>());
  for (auto& [name, c] : p["candidates"].items()) {
    if (c.contains("error")) {
      std::printf("    %-26s segmux %9.3f s   ort: not run (%s)\n", name.c_str(), c["segmux_seconds"].get<double>(),
                  c["error"].get<std::string>().c_str());
      continue;
    }
    std::printf("    %-26s segmux %9.3f s   ort %9.3f s   ratio %6.3f\n", name.c_str(),
                c["segmux_seconds"].get<double>(), c["peer_seconds"].get<double>(), c["ratio"].get<double>());
  }
}

constexpr int kMaxBuckets = 8;

int bench_frame_main(int argc, char** argv) {
  CLI::App app{
      "Benchmark one steady-state tracked frame of the product path (the compiled backend `segmux track` uses): "
      "backbone, detector, propagation decoder with N objects in one tracker state and a full memory bank, "
      "memory encoder. Objects are added through the backend's mask-input path; frames are tracked until "
      "the memory bank is full, then timed. Reports per-candidate medians, the total, peak RSS and the load "
      "average.",
      "segmux bench-frame"};
  ModelSource src;
  int objects = 1, frames = 3, threads = 2, warmup = -1;
  bool as_json = false;
  std::string peer;
  app.add_option("--weights", src.weights, "SAM 3.1 checkpoint (.pt or .safetensors); compiled on first use")
      ->required();
  app.add_option("--config", src.config, "model config JSON (default: full-size SAM 3.1)");
  src.read_config = verify::load_model_or_fixture_config;  // a fixture's config.json too
  app.add_option("--vocab", src.vocab, "bpe_simple_vocab_16e6.txt.gz (default: beside the checkpoint)");
  app.add_option("--cache-dir", src.cache_dir, "where compiled candidates are cached (default ~/.cache/segmux)");
  app.add_option("--objects", objects,
                 "tracked objects in one tracker state (default 1; above the config's multiplex_count they fill "
                 "several buckets, at most 8)")
      ->check(CLI::PositiveNumber);
  add_precision_option(app, src.precision, "fp32 or bf16 (weights of MatMul/Gemm/Conv in bf16)");
  add_threads_option(app, threads, "CPU threads");
  app.add_option("--frames", frames, "timed frames (default 3; medians are reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "tracked frames before timing (default: enough to fill the memory bank)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--peer", peer,
                 "ort: also run the frame's candidate calls (same inputs) on ONNX Runtime over the exported ONNX "
                 "candidates (exported into the cache on first use) and report both times and their ratio")
      ->check(CLI::IsMember({"ort"}));
  app.add_flag("--json", as_json, "print the report as JSON");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  src.num_threads = threads;
  SEGMUX_CHECK(std::filesystem::is_regular_file(src.weights), "bench-frame: cannot read checkpoint '", src.weights,
               "'");
  auto log = [&](const std::string& s) {
    if (!as_json) std::fprintf(stderr, "%s\n", s.c_str());
  };
  std::string peer_why;
  SEGMUX_CHECK(peer.empty() || engine_available(peer, &peer_why),
               "bench-frame: --peer ort: the peer is not available in this build or on this machine (", peer_why, ")");
  const std::vector<double> load_before = load_average();

  // The cfg is needed before opening (frame count); open_model reads the same file again.
  auto t_open = Clock::now();
  OpenedModel model = open_model(src, log);
  CallRecorder rec;
  RecordingBackend recording;
  if (!peer.empty()) {  // the same compiled files, behind runners that can record the frame's calls
    ensure_onnx_candidates(model.config, src.weights, model.model_dir, log);
    model.model.reset();
    const std::string vocab = src.vocab.empty() ? sam31::Tokenizer::find_vocabulary(src.weights) : src.vocab;
    recording = open_recording_backend(model.config, model.model_dir,
                                       sam31::Tokenizer::load(vocab, model.config.text_context_length), threads, rec);
  }
  const double open_s = seconds_since(t_open);
  const size_t open_peak = vm_hwm_bytes();  // includes compiling the checkpoint when it was not cached yet
  const bool peak_reset = reset_peak_rss();
  const sam31::ModelConfig& cfg = model.config;
  // More objects than multiplex_count fill several buckets of the state, as N detections added on one frame
  // do (32 / 64 at full size: 2 / 4 buckets). Bounded, since every bucket costs a tracker call.
  SEGMUX_USAGE_CHECK(objects <= kMaxBuckets * cfg.multiplex_count, "--objects ", objects, " needs more than ",
                     kMaxBuckets, " multiplex buckets of ", cfg.multiplex_count, " slots");
  if (warmup < 0) warmup = cfg.num_maskmem;
  const std::unique_ptr<ModelSession> session = (recording.model ? *recording.model : *model.model).new_session();
  ModelSession& be = *session;
  const ModelGeometry geo = be.geometry();
  const std::vector<std::string> text = {"object", "visual", "geometric"};

  // The state the control plane would hold after adding N new objects on frame 0.
  MultiplexBuckets buckets(objects, cfg.multiplex_count, cfg.multiplex_count);
  TrackerStateView st;
  st.state_id = 0;
  for (int k = 0; k < objects; ++k) st.obj_ids.push_back(k + 1);
  st.buckets = buckets.slots();
  st.bucket_ids = buckets.bucket_ids();
  st.num_frames = 1 << 20;
  st.memory_frames.push_back({0, true, st.obj_ids});
  // The text is encoded when the prompt arrives, before the first frame's backbone (as the control plane
  // does: the text encoder's weights are not resident beside the backbone's then), and kept.
  auto t_text = Clock::now();
  be.prepare_text(text);
  const double text_s = seconds_since(t_text);
  auto t_seed = Clock::now();
  be.run_backbone(0, synthetic_frame(geo.image_size, 0));
  be.detect(0, text, {});
  be.add_masks(st, 0, st.obj_ids, object_masks(objects, geo.input_mask_size), MaskInputKind::NewObjects, true);
  be.release_frame(0);
  const double seed_s = seconds_since(t_seed);

  std::vector<FrameTimes> timed;
  for (int f = 1; f <= warmup + frames; ++f) {
    FrameTimes t;
    rec.recording = recording.model && f == warmup + frames;  // the last timed frame
    auto t0 = Clock::now(), t1 = t0;
    auto lap = [&](double& slot) {
      auto now = Clock::now();
      slot = std::chrono::duration<double>(now - t1).count();
      t1 = now;
    };
    be.run_backbone(f, synthetic_frame(geo.image_size, f));
    lap(t.backbone);
    DetectorOutput det = be.detect(f, text, {});
    lap(t.detector);
    TrackerOutput trk = be.propagate(st, f, false);
    lap(t.propagation);
    // As the control plane: low-res masks upsampled to the mask-input size, presence from the masks.
    MaskStack low = MaskStack::from_tensor(trk.low_res_masks, "tracker masks");
    MaskStack hi = resize_bilinear(low, geo.input_mask_size, geo.input_mask_size);
    std::vector<float> presence;
    for (int j = 0; j < hi.count; ++j) {
      const float* p = hi.mask(j);
      presence.push_back(std::any_of(p, p + hi.plane(), [](float v) { return v > 0.f; }) ? 10.f : -10.f);
    }
    st.memory_frames.push_back({f, false, {}});
    t1 = Clock::now();
    be.encode_memory(st, f, hi.to_tensor(), Tensor::from_vector<float>({int64_t(presence.size())}, presence));
    lap(t.memory_encoder);
    be.release_frame(f);
    t.total = seconds_since(t0);
    rec.recording = false;
    log("frame " + std::to_string(f) + (f <= warmup ? " (warm-up)" : "") + ": " + std::to_string(t.total) + " s");
    if (f > warmup) timed.push_back(t);
  }

  auto pick = [&](double FrameTimes::*m) {
    std::vector<double> v;
    for (auto& t : timed) v.push_back(t.*m);
    return median(v);
  };
  const size_t rss = vm_hwm_bytes();
  nlohmann::json peer_report;
  if (recording.model) {
    log("peer: the frame's candidate calls on our runtime and on ONNX Runtime (same inputs)");
    peer_report = run_ort_peer(recording, rec, PeerOptions{model.model_dir, threads, 1, frames});
    peer_report["segmux_precision"] = src.precision;  // ONNX Runtime runs the exported fp32 ONNX
  }
  const std::vector<double> load_after = load_average();
  nlohmann::json j;
  j["weights"] = src.weights;
  j["model_dir"] = model.model_dir;
  j["image_size"] = geo.image_size;
  j["objects"] = objects;
  j["buckets"] = int(st.buckets.size());
  j["precision"] = src.precision;
  j["threads"] = threads;
  j["warmup_frames"] = warmup;
  j["timed_frames"] = frames;
  j["open_seconds"] = open_s;
  j["text_seconds"] = text_s;  // the text encoder on the prompt's text batch
  j["seed_seconds"] = seed_s;
  j["candidates"] = {{"backbone", pick(&FrameTimes::backbone)},
                     {"detector", pick(&FrameTimes::detector)},
                     {"propagation_decoder", pick(&FrameTimes::propagation)},
                     {"memory_encoder", pick(&FrameTimes::memory_encoder)}};
  j["total_seconds"] = pick(&FrameTimes::total);
  j["peak_rss_bytes"] = rss;  // since the model was open (VmHWM reset then), or the whole process
  j["peak_rss_since_open"] = peak_reset;
  j["open_peak_rss_bytes"] = open_peak;
  j["load_average_before"] = load_before;
  j["load_average_after"] = load_after;
  if (!peer_report.is_null()) j["peer"] = peer_report;
  if (as_json) {
    std::printf("%s\n", json_text(j, 1).c_str());
    return 0;
  }
  std::printf("bench-frame: %s, %d object(s), %s, %d threads, image %d, medians of %d frame(s) after %d warm-up\n",
              src.weights.c_str(), objects, src.precision.c_str(), threads, geo.image_size, frames, warmup);
  for (auto& [name, s] : j["candidates"].items()) std::printf("  %-22s %9.3f s\n", name.c_str(), s.get<double>());
  std::printf("  %-22s %9.3f s (candidates + glue)\n", "whole frame", j["total_seconds"].get<double>());
  std::printf("  open %.2f s, text %.2f s, seeding %.2f s; peak RSS %s%s (opening: %s)\n", open_s, text_s, seed_s,
              human_bytes(double(rss)).c_str(), peak_reset ? " after opening" : "",
              human_bytes(double(open_peak)).c_str());
  auto la = [](const std::vector<double>& l) {
    return l.size() == 3 ? std::to_string(l[0]).substr(0, 5) + " " + std::to_string(l[1]).substr(0, 5) + " " +
                               std::to_string(l[2]).substr(0, 5)
                         : std::string("unknown");
  };
  if (!peer_report.is_null()) print_peer(peer_report);
  std::printf("  load average before: %s, after: %s\n", la(load_before).c_str(), la(load_after).c_str());
  return 0;
}

CommandRegistration reg("bench-frame", "benchmark one steady-state tracked frame, candidate by candidate",
                        bench_frame_main);

}  // namespace

}  // namespace segmux::apps
