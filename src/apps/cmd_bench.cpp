// segmux bench MODEL [--warmup N --iters N --threads N] [--device cpu|cuda [--tf32]] [--peer ort]
//              [--profile TRACE.json --top N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/offline_model.h"
#include "runtime/profiler.h"
#include "verify/ort_peer.h"

namespace segmux::apps {

namespace {

struct Latency {
  double min_ms = 0, median_ms = 0, p99_ms = 0, mean_ms = 0, throughput = 0;
};

struct NoHooks {
  void begin() {}
  void end() {}
};

// `hooks` brackets each timed run (the profiler records those, not the warm-up runs).
template <typename Fn, typename Hooks = NoHooks>
Latency measure(int warmup, int iters, Fn&& fn, Hooks&& hooks = {}) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    hooks.begin();
    auto t0 = std::chrono::steady_clock::now();
    fn();
    hooks.end();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  Latency l;
  l.min_ms = ms.front();
  l.median_ms = ms[ms.size() / 2];
  l.p99_ms = ms[std::min(ms.size() - 1, size_t(double(ms.size()) * 0.99))];
  double sum = 0;
  for (double m : ms) sum += m;
  l.mean_ms = sum / double(ms.size());
  l.throughput = l.mean_ms > 0 ? 1000.0 / l.mean_ms : 0;
  return l;
}

nlohmann::json latency_json(const Latency& l) {
  return {{"min_ms", l.min_ms},
          {"median_ms", l.median_ms},
          {"p99_ms", l.p99_ms},
          {"mean_ms", l.mean_ms},
          {"throughput_per_s", l.throughput}};
}

nlohmann::json profile_json(const ExecutorProfiler& p, const std::string& path, size_t top) {
  auto rows = [](const std::vector<ProfileRow>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const ProfileRow& r : v)
      a.push_back({{"name", r.key},
                   {"op_type", r.op_type},
                   {"calls", r.calls},
                   {"seconds", r.seconds},
                   {"share", r.share},
                   {"gflop", r.flops * 1e-9},
                   {"gflop_per_s", r.gflops_per_s()}});
    return a;
  };
  auto ops = p.by_op_type();
  if (ops.size() > top) ops.resize(top);
  return {{"trace", path},
          {"runs", p.runs()},
          {"events", p.events().size()},
          {"run_seconds", p.mean_run_seconds()},
          {"op_types", rows(ops)},
          {"nodes", rows(p.by_node(top))}};
}

// --device cuda: the compiled model (a .smx file, or an ONNX model compiled in memory) on the CUDA executor.
std::unique_ptr<CudaExecutor> open_cuda_model(const std::string& path, const OpenOptions& oo, bool tf32) {
  CudaExecutorOptions co;
  co.fp32_gemm = tf32 ? cuda::Fp32Gemm::tf32 : cuda::Fp32Gemm::exact;
  if (is_smx_file(path)) {
    OfflineModel m = load_offline_model_file(path);
    return std::make_unique<CudaExecutor>(std::move(m.graph), std::move(m.plan), co);
  }
  SEGMUX_USAGE_CHECK(oo.engine != Engine::session, "--device cuda runs compiled models only (not --engine session)");
  compiler::CompileOptions opt;
  opt.precision = oo.precision;
  opt.strided_views = false;
  auto c = compiler::compile_graph(import_model_graph(path, oo.input_shapes), opt);
  return std::make_unique<CudaExecutor>(std::move(c.graph), std::move(c.plan), co);
}

int bench_cuda(const std::string& model, const OpenOptions& oo, bool tf32, int warmup, int iters, uint64_t seed,
               bool as_json) {
  auto t0 = std::chrono::steady_clock::now();
  auto ex = open_cuda_model(model, oo, tf32);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto inputs = verify::seeded_inputs(ex->graph(), seed);
  const Latency ours = measure(warmup, iters, [&] { ex->run(inputs); });  // each run ends synchronised
  const std::string engine = std::string("compiled on cuda (") + (tf32 ? "tf32" : "exact fp32") + " GEMMs)";
  nlohmann::json j;
  j["model"] = model;
  j["engine"] = engine;
  j["device"] = "cuda";
  j["warmup"] = warmup;
  j["iters"] = iters;
  j["load_seconds"] = load_s;
  j["segmux"] = latency_json(ours);
  j["arena_bytes"] = ex->layout().arena_bytes;
  j["weight_bytes"] = ex->layout().weight_bytes;
  if (as_json) {
    std::printf("%s\n", json_text(j, 1).c_str());
    return 0;
  }
  std::printf("%s (%s), load %.3f s, %d warmup + %d timed runs (inputs and outputs copied each run)\n", model.c_str(),
              engine.c_str(), load_s, warmup, iters);
  std::printf("  segmux   min %9.3f ms  median %9.3f ms  p99 %9.3f ms  %8.2f runs/s\n", ours.min_ms, ours.median_ms,
              ours.p99_ms, ours.throughput);
  std::printf("  device arena %s, weights %s\n", human_bytes(double(ex->layout().arena_bytes)).c_str(),
              human_bytes(double(ex->layout().weight_bytes)).c_str());
  return 0;
}

int bench_main(int argc, char** argv) {
  CLI::App app{
      "Benchmark a model: latency min/median/p99, throughput (runs/s at batch 1), peak RSS. With "
      "--peer ort, ONNX Runtime runs the same ONNX model in the same process and the report gives "
      "ratios (ours / ORT; below 1 = we are faster).",
      "segmux bench"};
  std::string model, engine = "compiled", peer, peer_model, precision = "fp32", profile_path;
  int top = 15;
  std::vector<std::string> shapes;
  int warmup = 2, iters = 10, threads = 2;
  bool as_json = false;
  uint64_t seed = 0;
  app.add_option("model", model, "ONNX model or compiled .smx file")->required();
  app.add_option("--warmup", warmup, "untimed runs first (default 2)")->check(CLI::NonNegativeNumber);
  app.add_option("--iters", iters, "timed runs (default 10)")->check(CLI::PositiveNumber);
  add_threads_option(app, threads, "threads for us and the peer");
  app.add_option("--engine", engine, "for ONNX models: compiled (default, in memory) or session")
      ->check(CLI::IsMember({"session", "compiled"}));
  app.add_option("--precision", precision, "for ONNX models compiled in memory: fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--input-shape", shapes, "fix an ONNX input's shape: name:d0,d1,... (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--peer", peer, "also run a peer on the same model: ort")->check(CLI::IsMember({"ort"}));
  app.add_option("--peer-model", peer_model, "ONNX file for the peer (needed when MODEL is a .smx file)");
  app.add_option("--seed", seed, "seed of the random inputs");
  app.add_option("--profile", profile_path,
                 "write a per-node trace of the timed runs (Chrome trace-event JSON: Perfetto, chrome://tracing) and "
                 "add the slowest op types and nodes to the report");
  app.add_option("--top", top, "rows of the profile tables (default 15)")->check(CLI::PositiveNumber);
  app.add_flag("--json", as_json, "print the report as JSON");
  std::string device = "cpu";
  bool tf32 = false;
  app.add_option("--device", device, "where the model runs: cpu (default) or cuda (docs/cuda.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_flag("--tf32", tf32, "with --device cuda: fp32 GEMMs on TF32 tensor cores instead of exact fp32");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  OpenOptions oo;
  oo.engine = parse_engine(engine);
  oo.threads = threads;
  oo.precision = precision;
  oo.input_shapes = parse_input_shapes(shapes);
  SEGMUX_USAGE_CHECK(!tf32 || device == "cuda", "--tf32 goes with --device cuda");
  if (device == "cuda") {
    SEGMUX_USAGE_CHECK(profile_path.empty() && peer.empty(), "--profile and --peer run on the CPU only");
    return bench_cuda(model, oo, tf32, warmup, iters, seed, as_json);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto runner = open_model(model, oo);
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto inputs = verify::seeded_inputs(runner->graph(), seed);
  std::unique_ptr<ExecutorProfiler> profiler;
  if (!profile_path.empty()) {
    SEGMUX_USAGE_CHECK(runner->executor_ != nullptr,
                       "--profile needs the compiled engine (a .smx file, or --engine "
                       "compiled for ONNX models); this model runs on the ",
                       runner->engine_name(), " engine");
    profiler = std::make_unique<ExecutorProfiler>(*runner->executor_);
  }
  struct ProfileHooks {
    ExecutorProfiler* p;
    void begin() {
      if (p) p->begin_run();
    }
    void end() {
      if (p) p->end_run();
    }
  };
  Latency ours = measure(
      warmup, iters, [&] { runner->run(inputs); }, ProfileHooks{profiler.get()});
  if (profiler) profiler->write_chrome_trace(profile_path);
  size_t rss = peak_rss_bytes();
  nlohmann::json j;
  j["model"] = model;
  j["engine"] = runner->engine_name();
  j["threads"] = threads;
  j["warmup"] = warmup;
  j["iters"] = iters;
  j["load_seconds"] = load_s;
  j["load_file_seconds"] = runner->load_seconds_;
  j["prepare_seconds"] = runner->prepare_seconds_;
  j["segmux"] = latency_json(ours);
  j["peak_rss_bytes"] = rss;
  if (runner->executor()) j["arena_bytes"] = runner->executor()->plan().arena_bytes;
  if (profiler) j["profile"] = profile_json(*profiler, profile_path, size_t(top));
  Latency theirs;
  if (!peer.empty()) {
    std::string onnx = peer_model.empty() ? model : peer_model;
    SEGMUX_USAGE_CHECK(!is_smx_file(onnx), "--peer ort needs the ONNX model: give it with --peer-model FILE.onnx");
    std::string why;
    SEGMUX_CHECK(ort_available(&why), "ONNX Runtime is not available: ", why);
    verify::OrtPeerOptions po;
    po.num_threads = threads;
    verify::OrtPeer ort(onnx, po);
    theirs = measure(warmup, iters, [&] { ort.run(inputs); });
    j["ort"] = latency_json(theirs);
    j["ratio_median"] = ours.median_ms / theirs.median_ms;
    j["ratio_min"] = ours.min_ms / theirs.min_ms;
    j["peak_rss_bytes_with_peer"] = peak_rss_bytes();
  }
  if (as_json) {
    std::printf("%s\n", json_text(j, 1).c_str());
    return 0;
  }
  std::printf("%s (%s, %d threads), load %.3f s (file %.3f s, kernels+arena %.3f s), %d warmup + %d timed runs\n",
              model.c_str(), runner->engine_name().c_str(), threads, load_s, runner->load_seconds_,
              runner->prepare_seconds_, warmup, iters);
  auto row = [](const char* who, const Latency& l) {
    std::printf("  %-8s min %9.3f ms  median %9.3f ms  p99 %9.3f ms  %8.2f runs/s\n", who, l.min_ms, l.median_ms,
                l.p99_ms, l.throughput);
  };
  row("segmux", ours);
  if (!peer.empty()) {
    row("ort", theirs);
    std::printf("  ratio segmux/ort: median %.3f, min %.3f\n", ours.median_ms / theirs.median_ms,
                ours.min_ms / theirs.min_ms);
  }
  std::printf("  peak RSS %s", human_bytes(double(rss)).c_str());
  if (runner->executor())
    std::printf(", arena %s", human_bytes(double(runner->executor()->plan().arena_bytes)).c_str());
  std::printf("\n");
  if (profiler) {
    std::printf("%s", profiler->summary_text(size_t(top)).c_str());
    std::printf("  trace: %s (%zu node events)\n", profile_path.c_str(), profiler->events().size());
  }
  return 0;
}

CommandRegistration reg("bench", "benchmark a model (latency, throughput, RSS), optionally against ONNX Runtime",
                        bench_main);

}  // namespace

}  // namespace segmux::apps
