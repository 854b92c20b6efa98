// bench_vit_block: one full-size SAM 3.1 ViT block (sizes from sam31::ModelConfig: token grid, width,
// heads, MLP hidden, window) with random weights: pre-LN, qkv with bias, 2-D axial RoPE (real
// sin/cos), exact-erf GELU MLP, residuals; windowed (window partition into the batch dim) and
// global attention. Built with the SAM 3.1 layer helpers (the patterns the model emits), compiled by
// our compiler (fusion passes, memory plan) and run by our Executor; the peer is ONNX Runtime on the
// same graph exported to ONNX, same thread count, same inputs, in the same process.
// Usage: bench_vit_block [threads=2] [reps=3] [windowed|global|both] [ab] [profile]
// `ab` adds a bf16 build without the pass bf16-between-linears (fc1 writes f32 for fc2: the build before
// that pass), timed in turns with the others; `profile` prints each segmux build's per-op-type table of
// the timed runs (runtime/profiler.h).
#include <omp.h>

#include <cstdlib>

#include "bench_common.h"
#include "compiler/compile.h"
#include "models/sam31/config.h"
#include "models/sam31/layers.h"
#include "onnx/onnx_io.h"
#include "runtime/profiler.h"
#include "verify/ort_peer.h"

using namespace segmux;
using namespace segmux::bench;
namespace L = segmux::sam31::layers;

namespace {

Tensor uniform(const Shape& s, uint32_t seed, float bound) { return random_f32(s, seed, -bound, bound); }

sam31::Weights block_weights(int64_t C, int64_t hidden) {
  sam31::Weights w;
  uint32_t seed = 100;
  const float bc = 1.f / std::sqrt(float(C)), bh = 1.f / std::sqrt(float(hidden));
  w.set("norm1.weight", random_f32({C}, seed++, 0.8f, 1.2f));
  w.set("norm1.bias", uniform({C}, seed++, 0.1f));
  w.set("attn.qkv.weight", uniform({3 * C, C}, seed++, bc));
  w.set("attn.qkv.bias", uniform({3 * C}, seed++, bc));
  w.set("attn.proj.weight", uniform({C, C}, seed++, bc));
  w.set("attn.proj.bias", uniform({C}, seed++, bc));
  w.set("norm2.weight", random_f32({C}, seed++, 0.8f, 1.2f));
  w.set("norm2.bias", uniform({C}, seed++, 0.1f));
  w.set("mlp.fc1.weight", uniform({hidden, C}, seed++, bc));
  w.set("mlp.fc1.bias", uniform({hidden}, seed++, bc));
  w.set("mlp.fc2.weight", uniform({C, hidden}, seed++, bh));
  w.set("mlp.fc2.bias", uniform({C}, seed++, bh));
  return w;
}

// vitdet Attention on (B', N, C) tokens.
int attention(ir::GraphBuilder& b, const sam31::Weights& w, int x, int64_t heads, const L::RopeTables& rope) {
  const Shape s = b.shape(x);
  const int64_t Bp = s[0], N = s[1], C = s[2], hd = C / heads;
  int qkv = L::linear(b, w, x, "attn.qkv");
  qkv = L::transpose(b, L::reshape(b, qkv, {Bp, N, 3, heads, hd}), {2, 0, 3, 1, 4});
  auto parts = L::split(b, qkv, 0, {1, 1, 1});
  int q = L::apply_rope(b, L::squeeze(b, parts[0], {0}), rope, "rope_q");
  int k = L::apply_rope(b, L::squeeze(b, parts[1], {0}), rope, "rope_k");
  int v = L::squeeze(b, parts[2], {0});
  int o = L::sdpa(b, q, k, v);
  o = L::reshape(b, L::transpose(b, o, {0, 2, 1, 3}), {Bp, N, C});
  return L::linear(b, w, o, "attn.proj");
}

ir::Graph build_block(const sam31::ModelConfig& cfg, const sam31::Weights& w, bool global) {
  ir::Graph g;
  ir::GraphBuilder b(g);
  const int64_t G = cfg.token_grid(), C = cfg.vit_dim, heads = cfg.vit_heads, ws = cfg.vit_window, hd = C / heads;
  SEGMUX_CHECK(G % ws == 0, "bench expects the token grid to be a multiple of the window");
  int x = b.input("x", DType::f32, {1, G, G, C});
  int h = L::layer_norm(b, w, x, "norm1");
  if (global) {
    const auto rope = L::axial_rope_tables(int(hd), int(G), int(G), 10000.0f, float(ws) / float(G));
    h = L::reshape(b, attention(b, w, L::reshape(b, h, {1, G * G, C}), heads, rope), {1, G, G, C});
  } else {
    const auto rope = L::axial_rope_tables(int(hd), int(ws), int(ws), 10000.0f, 1.0f);
    const int64_t nw = G / ws;
    h = L::transpose(b, L::reshape(b, h, {1, nw, ws, nw, ws, C}), {0, 1, 3, 2, 4, 5});
    h = attention(b, w, L::reshape(b, h, {nw * nw, ws * ws, C}), heads, rope);
    h = L::transpose(b, L::reshape(b, h, {1, nw, nw, ws, ws, C}), {0, 1, 3, 2, 4, 5});
    h = L::reshape(b, h, {1, G, G, C});
  }
  x = L::add(b, x, h);
  int m = L::linear(b, w, L::gelu_erf(b, L::linear(b, w, L::layer_norm(b, w, x, "norm2"), "mlp.fc1")), "mlp.fc2");
  b.output(L::add(b, x, m), "y");
  return g;
}

double block_flops(const sam31::ModelConfig& cfg, bool global) {
  const double N = double(cfg.token_grid()) * cfg.token_grid(), C = cfg.vit_dim, Hd = cfg.vit_mlp_hidden();
  const double lin = 2 * N * C * (3 * C + C + 2 * Hd);
  const double L = global ? N : double(cfg.vit_window) * cfg.vit_window;  // keys per query
  return lin + 4 * N * L * C;
}

void compare(const Tensor& a, const Tensor& b, const char* what) {
  double max_abs = 0, max_ref = 0, dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.data<float>()[i], y = b.data<float>()[i];
    max_abs = std::max(max_abs, std::fabs(x - y));
    max_ref = std::max(max_ref, std::fabs(y));
    dot += x * y, na += x * x, nb += y * y;
  }
  std::printf("    %-28s max|diff| %.3e (max|ref| %.3f), cosine %.9f\n", what, max_abs, max_ref,
              dot / std::sqrt(na * nb));
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string which = argc > 3 ? argv[3] : "both";
  bool ab = false, profile = false;
  for (int i = 4; i < argc; ++i) {
    ab |= std::string(argv[i]) == "ab";
    profile |= std::string(argv[i]) == "profile";
  }
  omp_set_num_threads(threads);
  const sam31::ModelConfig cfg = sam31::default_config();
  const sam31::Weights w = block_weights(cfg.vit_dim, cfg.vit_mlp_hidden());
  const int64_t G = cfg.token_grid();
  Tensor x = random_f32({1, G, G, cfg.vit_dim}, 7, -2.f, 2.f);
  std::string why;
  const bool have_ort = ort_available(&why);
  std::printf("bench_vit_block: %lldx%lld tokens, width %d, %d heads, MLP %d, window %d, %d thread(s)\n", (long long)G,
              (long long)G, cfg.vit_dim, cfg.vit_heads, cfg.vit_mlp_hidden(), cfg.vit_window, threads);
  if (!have_ort) std::printf("ONNX Runtime unavailable (%s): timing our side only\n", why.c_str());
  // The machine is shared: runs of the peers are interleaved (ORT, ours fp32, ours bf16, ...) and
  // both the best and the median of each are printed; the best is the least disturbed figure.
  for (bool global : {false, true}) {
    const char* kind = global ? "global" : "windowed";
    if (which != "both" && which != kind) continue;
    ir::Graph g = build_block(cfg, w, global);
    const double gflop = block_flops(cfg, global) / 1e9;
    std::printf("\n[%s block] %.1f GFLOP, %zu ONNX nodes\n", kind, gflop, g.nodes.size());
    struct Peer {
      std::string name;
      std::function<std::map<std::string, Tensor>()> run;
      std::vector<double> times, cpu_times;  // wall, and CPU seconds of the process (all threads)
      std::map<std::string, Tensor> out;
      ExecutorProfiler* profiler = nullptr;
    };
    std::vector<std::unique_ptr<ExecutorProfiler>> profilers;
    std::vector<Peer> peers;
    std::unique_ptr<verify::OrtPeer> ort;
    if (have_ort) {
      verify::OrtPeerOptions o;
      o.num_threads = threads;
      o.optimize = true;
      ort = verify::OrtPeer::from_bytes(onnx_io::export_onnx_bytes(g), o);
      peers.push_back({"ONNX Runtime (all optimizations)", [&] { return ort->run({{"x", x}}); }, {}, {}});
    }
    std::vector<std::unique_ptr<Executor>> executors;
    std::vector<std::pair<std::string, std::string>> builds = {{"fp32", ""}, {"bf16", ""}};
    if (ab) builds.push_back({"bf16", "bf16-between-linears"});
    for (const auto& [precision, skipped] : builds) {
      compiler::CompileOptions co;
      co.precision = precision;
      if (!skipped.empty()) co.skip_passes.insert(skipped);
      const std::string name = precision + (skipped.empty() ? "" : " -" + skipped);
      compiler::CompileResult r = compiler::compile_graph(g, co);
      int fused = 0;
      for (auto& n : r.graph.nodes) fused += n.domain == "segmux";
      std::printf("  compiled %s: %zu nodes (%d fused), arena %.0f MiB\n", name.c_str(), r.graph.nodes.size(), fused,
                  double(r.plan.arena_bytes) / (1 << 20));
      ExecutorOptions eo;
      eo.num_threads = threads;
      executors.push_back(std::make_unique<Executor>(r.graph, r.plan, eo));
      Executor* ex = executors.back().get();
      peers.push_back({"segmux " + name, [ex, &x] { return ex->run({{"x", x}}); }, {}, {}});
      if (profile) {
        profilers.push_back(std::make_unique<ExecutorProfiler>(*ex));
        peers.back().profiler = profilers.back().get();
      }
    }
    for (auto& p : peers) p.out = p.run();  // warm-up (first touch, plans)
    for (int rep = 0; rep < reps; ++rep)
      for (auto& p : peers) {
        if (p.profiler) p.profiler->begin_run();
        const double t0 = now_s(), c0 = cpu_s();
        p.out = p.run();
        p.times.push_back(now_s() - t0);
        p.cpu_times.push_back(cpu_s() - c0);
        if (p.profiler) p.profiler->end_run();
      }
    const double ort_best = have_ort ? *std::min_element(peers[0].times.begin(), peers[0].times.end()) : 0;
    std::vector<double> sorted_ort = have_ort ? peers[0].times : std::vector<double>{};
    std::sort(sorted_ort.begin(), sorted_ort.end());
    for (auto& p : peers) {
      std::vector<double> t = p.times;
      std::sort(t.begin(), t.end());
      std::printf("  %-34s best %7.3f s (%6.1f GFLOP/s)  median %7.3f s", p.name.c_str(), t.front(), gflop / t.front(),
                  t[t.size() / 2]);
      if (have_ort && &p != &peers[0])
        std::printf("   ORT/segmux best %.2fx, median %.2fx", ort_best / t.front(),
                    sorted_ort[sorted_ort.size() / 2] / t[t.size() / 2]);
      std::vector<double> c = p.cpu_times;
      std::sort(c.begin(), c.end());
      std::printf("   CPU median %.3f s\n", c[c.size() / 2]);
      if (have_ort && &p != &peers[0]) compare(p.out.at("y"), peers[0].out.at("y"), ("vs ORT: " + p.name).c_str());
    }
    if (ab)  // the pass must not change a bit (the reader rounded to bf16 before)
      std::printf("  bf16 with / without bf16-between-linears: outputs %s\n",
                  peers[peers.size() - 2].out.at("y").identical(peers.back().out.at("y")) ? "bit-identical" : "DIFFER");
    for (auto& p : peers)
      if (p.profiler) std::printf("\n  profile of %s:\n%s", p.name.c_str(), p.profiler->summary_text(8).c_str());
  }
  return 0;
}
