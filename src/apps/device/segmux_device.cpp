// segmux-device: the device-only tool the GPU machine runs (scripts/device_check.sh). It links the
// runtime and the CUDA backend only (no media, ONNX, ICU or HTTP), so that it travels with libdnnl alone.
//   segmux-device versions
//   segmux-device ceilings [--size N] [--json FILE]           bf16/TF32/fp32 GEMM and device-copy rates
//   segmux-device run MODEL.smx [--inputs IN.safetensors] [--seed N] [--compare-cpu] [--tf32]
//                 [--warmup N] [--iters N] [--json FILE]     GPU timing; with --compare-cpu the same
//                 inputs through the CPU executor and each output's cosine and relative error
//   segmux-device fullsize [--candidate NAME[:VARIANT]]... [--precision fp32|bf16] [--tf32] [--seed N]
//                 [--work-dir DIR] [--warmup N] [--iters N] [--compare-cpu] [--json FILE]
//                 a random full-size checkpoint written there (~3.5 GB, then removed), every candidate
//                 built and compiled from it, timed on the GPU (and checked against the CPU)
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compiler/compile.h"
#include "io/files.h"
#include "io/safetensors.h"
#include "kernels/cuda/cuda_memory.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/weights.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/offline_model.h"
#include "verify/sam31/random_checkpoint.h"

namespace segmux::device_tool {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // --name value, or "1" for flags
  std::vector<std::string> candidates;         // --candidate, repeatable
  bool flag(const std::string& n) const { return options.count(n) != 0; }
  std::string get(const std::string& n, const std::string& def) const {
    auto it = options.find(n);
    return it == options.end() ? def : it->second;
  }
  int get_int(const std::string& n, int def) const {
    const std::string v = get(n, "");
    if (v.empty()) return def;
    SEGMUX_CHECK(v.find_first_not_of("0123456789") == std::string::npos && v.size() < 9, "--", n, ": '", v,
                 "' is not a count");
    return std::stoi(v);
  }
};

Args parse(int argc, char** argv, const std::vector<std::string>& flags) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
      continue;
    }
    s = s.substr(2);
    if (std::find(flags.begin(), flags.end(), s) != flags.end()) {
      a.options[s] = "1";
    } else if (s == "candidate") {
      SEGMUX_CHECK(i + 1 < argc, "--candidate needs a value");
      a.candidates.push_back(argv[++i]);
    } else {
      SEGMUX_CHECK(i + 1 < argc, "--", s, " needs a value");
      a.options[s] = argv[++i];
    }
  }
  return a;
}

void write_json(const Args& a, const nlohmann::json& j) {
  const std::string path = a.get("json", "");
  if (path.empty()) return;
  const std::string text = j.dump(1) + "\n";
  write_file_atomic(path, text.data(), text.size());
}

int versions() {
  cuda::require_device();
  char text[512];
  cuda::check_cuda(cuda::device_versions(text, sizeof text), "versions");
  std::printf("%s\n", text);
  cuda::check_cuda(cuda::device_describe(0, text, sizeof text), "device");
  std::printf("device 0: %s\n", text);
  return 0;
}

// Seconds per call of fn over `iters` calls after one warm-up, each batch synchronised.
template <typename Fn>
double time_calls(cuda::Stream s, int iters, Fn&& fn) {
  fn();
  cuda::check_cuda(cuda::stream_sync(s), "warm-up");
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  cuda::check_cuda(cuda::stream_sync(s), "timed calls");
  return std::chrono::duration<double>(Clock::now() - t0).count() / iters;
}

int ceilings(const Args& a) {
  cuda::require_device();
  const int64_t n = a.get_int("size", 8192);
  cuda::Stream s = nullptr;
  cuda::check_cuda(cuda::stream_create(&s), "stream");
  Tensor host(DType::f32, {n, n});  // random data: zeros run faster than real data on this card
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t i = 0; i < host.numel(); ++i) host.data<float>()[i] = d(rng);
  Tensor a32 = cuda::upload(host, s), w32 = cuda::upload(host, s);
  cuda::DeviceBuffer a16(size_t(n * n) * 2), w16(size_t(n * n) * 2), out(size_t(n * n) * 4);
  cuda::check_cuda(cuda::launch_cast(cuda::ScalarKind::f32, cuda::ScalarKind::bf16, a32.raw(), a16.data(), n * n, s),
                   "cast");
  cuda::check_cuda(cuda::launch_cast(cuda::ScalarKind::f32, cuda::ScalarKind::bf16, w32.raw(), w16.data(), n * n, s),
                   "cast");
  nlohmann::json j;
  const double flop = 2.0 * double(n) * double(n) * double(n);
  for (auto [name, mode] : {std::pair{"bf16", cuda::GemmMode::bf16}, std::pair{"tf32", cuda::GemmMode::tf32},
                            std::pair{"fp32", cuda::GemmMode::fp32}}) {
    cuda::GemmShape g;
    g.m = g.n = g.k = n;
    g.mode = mode;
    const bool half = mode == cuda::GemmMode::bf16;
    const double sec = time_calls(s, half ? 10 : 3, [&] {
      cuda::check_cuda(cuda::launch_gemm(g, half ? a16.data() : a32.raw(), half ? w16.data() : w32.raw(), nullptr,
                                         nullptr, static_cast<float*>(out.data()), s),
                       std::string(name) + " GEMM");
    });
    j[std::string(name) + "_gemm_tflops"] = flop / sec * 1e-12;
    std::printf("%s GEMM %lldx%lldx%lld: %.1f TFLOP/s\n", name, (long long)n, (long long)n, (long long)n,
                flop / sec * 1e-12);
  }
  const size_t bytes = size_t(1) << 31;  // 2 GiB each way: far past the 60 MB L2
  cuda::DeviceBuffer src(bytes), dst(bytes);
  cuda::check_cuda(cuda::fill_bytes(src.data(), 0x3c, bytes, s), "fill");
  const double sec =
      time_calls(s, 10, [&] { cuda::check_cuda(cuda::copy_on_device(dst.data(), src.data(), bytes, s), "copy"); });
  j["copy_tbps"] = 2.0 * double(bytes) / sec * 1e-12;  // bytes read plus bytes written
  std::printf("device copy: %.2f TB/s (read + write)\n", 2.0 * double(bytes) / sec * 1e-12);
  cuda::stream_destroy(s);
  write_json(a, j);
  return 0;
}

struct Agreement {
  double cos = 1, rel = 0;  // cosine similarity and max|d| / max|ref|
  bool finite = true;
};

Agreement compare(const Tensor& got, const Tensor& want) {
  SEGMUX_CHECK(got.shape() == want.shape(), "shape ", shape_str(got.shape()), " vs ", shape_str(want.shape()));
  Agreement r;
  double dot = 0, ng = 0, nw = 0, worst = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get_as_double(i), w = want.get_as_double(i);
    r.finite = r.finite && (std::isfinite(g) || !std::isfinite(w));
    if (!std::isfinite(w)) continue;
    dot += g * w, ng += g * g, nw += w * w;
    worst = std::max(worst, std::fabs(g - w));
    scale = std::max(scale, std::fabs(w));
  }
  r.cos = ng > 0 && nw > 0 ? dot / std::sqrt(ng * nw) : (ng == nw ? 1.0 : 0.0);
  r.rel = scale > 0 ? worst / scale : worst;
  return r;
}

// The rule of verify/seeded_inputs.h (not linked here): floats uniform in [-1, 1), integers and bools 0
// or 1 (integer inputs are often indices).
std::map<std::string, Tensor> random_inputs(const ir::Graph& g, uint64_t seed) {
  std::map<std::string, Tensor> out;
  std::mt19937_64 rng(seed);
  for (int v : g.inputs) {
    const ir::Value& val = g.value(v);
    Tensor t(val.dtype, val.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set_from_double(
          i, dtype_is_float(val.dtype) ? std::uniform_real_distribution<double>(-1, 1)(rng) : double(rng() & 1));
    out[val.name] = std::move(t);
  }
  return out;
}

// Times `iters` runs after `warmup` and, with --compare-cpu, checks the GPU's outputs against the CPU
// executor's on the same inputs; fills `j` and prints one line per output. False when an output is not
// finite where the CPU's is.
bool time_and_compare(const Args& a, CudaExecutor& ex, ir::Graph graph, MemoryPlan plan,
                      const std::map<std::string, Tensor>& inputs, const std::string& label, nlohmann::json& j) {
  std::map<std::string, Tensor> outs;
  for (int i = 0; i < a.get_int("warmup", 2); ++i) outs = ex.run(inputs);
  std::vector<double> ms;
  for (int i = 0; i < a.get_int("iters", 10); ++i) {
    const auto t = Clock::now();
    outs = ex.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  if (outs.empty()) outs = ex.run(inputs);
  std::sort(ms.begin(), ms.end());
  const double median = ms.empty() ? 0.0 : ms[ms.size() / 2];
  j["median_ms"] = median;
  std::printf("%s: median %.3f ms over %zu runs (inputs and outputs copied each run)\n", label.c_str(), median,
              ms.size());
  if (!a.flag("compare-cpu")) return true;
  ExecutorOptions cpu;
  cpu.num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  Executor reference(std::move(graph), std::move(plan), cpu);
  bool ok = true;
  for (const auto& [name, t] : reference.run(inputs)) {
    const Agreement g = compare(outs.at(name).cast(DType::f64), t.cast(DType::f64));
    j["outputs"][name] = {{"cos", g.cos}, {"rel", g.rel}, {"finite", g.finite}};
    std::printf("  %-40s cos %.7f  rel %.3g%s\n", name.c_str(), g.cos, g.rel, g.finite ? "" : "  NOT FINITE");
    ok = ok && g.finite;
  }
  return ok;
}

CudaExecutorOptions gpu_options(const Args& a) {
  CudaExecutorOptions o;
  o.fp32_gemm = a.flag("tf32") ? cuda::Fp32Gemm::tf32 : cuda::Fp32Gemm::exact;
  return o;
}

int run_model(const Args& a) {
  SEGMUX_CHECK(a.positional.size() == 1, "run: give one MODEL.smx");
  const auto t0 = Clock::now();
  OfflineModel m = load_offline_model_file(a.positional[0]);
  CudaExecutor ex(m.graph, m.plan, gpu_options(a));
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::map<std::string, Tensor> inputs;
  if (const std::string path = a.get("inputs", ""); !path.empty()) {
    TensorFile in = read_safetensors(path);
    inputs.insert(in.tensors.begin(), in.tensors.end());
  } else {
    inputs = random_inputs(ex.graph(), uint64_t(a.get_int("seed", 1)));
  }
  nlohmann::json j = {{"model", a.positional[0]}, {"tf32", a.flag("tf32")}, {"load_seconds", load_s}};
  const bool ok = time_and_compare(a, ex, std::move(m.graph), std::move(m.plan), inputs,
                                   a.positional[0] + (a.flag("tf32") ? " (tf32 GEMMs)" : ""), j);
  write_json(a, j);
  return ok ? 0 : 1;
}

// Every compiled file of a model folder (or the --candidate ones) at full size on random weights.
int fullsize(const Args& a) {
  cuda::require_device();  // before minutes of work
  const sam31::ModelConfig cfg = sam31::default_config();
  const uint64_t seed = uint64_t(a.get_int("seed", 1));
  const std::string ckpt = a.get("work-dir", "/tmp") + "/segmux_random_fullsize_" + std::to_string(::getpid()) + ".pt";
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove_ckpt{ckpt};
  auto t0 = Clock::now();
  verify::write_random_checkpoint(ckpt, cfg, seed);
  sam31::Weights w = sam31::Weights::load(ckpt);
  sam31::check_weights(w, cfg);
  std::printf("random full-size checkpoint: %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  std::vector<std::pair<const sam31::Candidate*, std::string>> targets;
  for (const auto& f : sam31::compiled_files()) targets.push_back({&sam31::candidate(f.candidate), f.variant});
  if (!a.candidates.empty()) {
    targets.clear();
    for (const std::string& spec : a.candidates) {
      const size_t colon = spec.find(':');
      const sam31::Candidate* c = sam31::find_candidate(spec.substr(0, colon));
      SEGMUX_CHECK(c, "--candidate '", spec, "': unknown (known: ", sam31::candidate_names(), ")");
      targets.push_back({c, colon == std::string::npos ? "" : spec.substr(colon + 1)});
    }
  }
  nlohmann::json all = nlohmann::json::array();
  bool ok = true;
  for (const auto& [cand, variant] : targets) {
    const std::string label = cand->name + (variant.empty() ? "" : ":" + variant);
    nlohmann::json j = {{"candidate", label}, {"precision", a.get("precision", "fp32")}, {"tf32", a.flag("tf32")}};
    try {
      compiler::CompileOptions opt;
      opt.precision = a.get("precision", "fp32");
      opt.strided_views = false;
      compiler::CompileResult c = compiler::compile_graph(cand->build(cfg, w, variant), opt);
      CudaExecutor ex(c.graph, c.plan, gpu_options(a));
      const auto inputs = random_inputs(ex.graph(), seed);
      ok = time_and_compare(a, ex, std::move(c.graph), std::move(c.plan), inputs, label, j) && ok;
    } catch (const std::exception& e) {
      j["error"] = e.what();
      std::printf("%s: FAILED: %s\n", label.c_str(), e.what());
      ok = false;
    }
    all.push_back(j);
  }
  write_json(a, all);
  return ok ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: segmux-device versions | ceilings [--size N] [--json F] |\n"
               "       run MODEL.smx [--inputs IN.safetensors] [--seed N] [--compare-cpu] [--tf32] [--warmup N] "
               "[--iters N] [--json F] |\n"
               "       fullsize [--candidate NAME[:VARIANT]]... [--precision fp32|bf16] [--tf32] [--seed N] "
               "[--work-dir D] [--warmup N] [--iters N] [--compare-cpu] [--json F]\n");
  return 2;
}

}  // namespace
}  // namespace segmux::device_tool

int main(int argc, char** argv) {
  using namespace segmux::device_tool;
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  try {
    if (cmd == "versions") return versions();
    if (cmd == "ceilings") return ceilings(parse(argc, argv, {}));
    if (cmd == "run") return run_model(parse(argc, argv, {"tf32", "compare-cpu"}));
    if (cmd == "fullsize") return fullsize(parse(argc, argv, {"tf32", "compare-cpu"}));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segmux-device %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  return usage();
}
