// Shared bits of the benchmarks: timing, the FMA-peak probe, running one node through a provider.
// Benchmarks print figures and ratios against a peer measured in the same run; they assert nothing.
#pragma once
// GCC 12 false positive inside its own AVX-512 headers (bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <time.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "common/random_tensor.h"
#include "ir/op_schema.h"
#include "kernels/kernel.h"

namespace segmux::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best (minimum) seconds of `reps` timed calls after `warmup` untimed ones: on a shared, noisy machine
// the least disturbed run is the most comparable figure.
inline double time_best(const std::function<void()>& fn, int reps, int warmup = 1) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double t0 = now_s();
    fn();
    t.push_back(now_s() - t0);
  }
  return *std::min_element(t.begin(), t.end());
}

// 12 independent FMA chains (latency 4 x 2 pipes needs >= 8): f32 FLOPs = iters * 12 * 16 * 2.
__attribute__((target("avx512f"), noinline)) inline float fma_loop(int64_t iters) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

// vdpbf16ps: each instruction is 16 lanes x 2 products x 2 FLOPs = 64 FLOPs.
__attribute__((target("avx512f,avx512bf16"), noinline)) inline float bf16_dot_loop(int64_t iters) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
  for (int64_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

// Peak GFLOP/s of `threads` threads each running the loop (best of 3).
inline double measure_peak(bool bf16, int threads) {
  const int64_t iters = 20'000'000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> ts;
    std::vector<float> sink(static_cast<size_t>(threads));
    double t0 = now_s();
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] { sink[size_t(t)] = bf16 ? bf16_dot_loop(iters) : fma_loop(iters); });
    for (auto& th : ts) th.join();
    double dt = now_s() - t0;
    double flops = double(iters) * 12 * (bf16 ? 64 : 32) * threads;
    best = std::max(best, flops / dt / 1e9);
    if (sink[0] == 12345.f) std::printf(" ");  // keeps the loops observable
  }
  return best;
}

inline double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// FMA (or bf16 dot) peak of one thread per CPU second (best of 3): the per-core reference of the
// CPU-time figures.
inline double peak_per_cpu_second(bool bf16 = false) {
  const int64_t iters = 10'000'000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double c0 = cpu_s();
    const float sink = bf16 ? bf16_dot_loop(iters) : fma_loop(iters);
    const double dt = cpu_s() - c0;
    if (sink == 12345.f) std::printf(" ");
    best = std::max(best, double(iters) * 12 * (bf16 ? 64 : 32) / dt / 1e9);
  }
  return best;
}

inline void print_load() {
  double l[3] = {0, 0, 0};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = l[1] = l[2] = -1;
    std::fclose(f);
  }
  std::printf("load average: %.2f %.2f %.2f\n", l[0], l[1], l[2]);
}

inline Tensor random_f32(const Shape& s, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  return test::random_tensor(s, seed, lo, hi);
}

// One node, created once through a provider, run many times on preallocated outputs.
struct NodeRunner {
  ir::Node node;
  std::vector<ir::TensorType> in_types;
  std::vector<Tensor> inputs, outputs;
  std::unique_ptr<Kernel> kernel;
  int threads = 2;

  NodeRunner(const Provider& p, ir::Node n, std::vector<Tensor> ins, std::vector<bool> constant, int num_threads)
      : node(std::move(n)), inputs(std::move(ins)), threads(num_threads) {
    node.inputs.clear();
    in_types.resize(inputs.size());
    std::vector<const ir::TensorType*> tin;
    std::vector<const Tensor*> consts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      node.inputs.push_back(int(i));
      in_types[i] = ir::TensorType{inputs[i].dtype(), inputs[i].shape(), true};
      tin.push_back(&in_types[i]);
      consts.push_back(i < constant.size() && constant[i] ? &inputs[i] : nullptr);
    }
    if (node.outputs.empty()) node.outputs = {0};
    auto out_types = ir::infer_node(node, tin, consts);
    for (auto& t : out_types) outputs.emplace_back(t.dtype, t.shape);
    KernelInit init{node, tin, consts, out_types, threads};
    kernel = p.make(init);
    SEGMUX_CHECK(kernel != nullptr, "provider ", p.name, " does not handle ", node.op_type);
  }
  void run() {
    std::vector<const Tensor*> in;
    for (auto& t : inputs) in.push_back(&t);
    std::vector<Tensor*> out;
    for (auto& t : outputs) out.push_back(&t);
    KernelContext ctx{node, in, out, threads};
    kernel->run(ctx);
  }
};

inline ir::Node make_node(const std::string& op, std::map<std::string, ir::AttrValue> attrs = {},
                          const std::string& domain = "") {
  ir::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = "bench_" + op;
  n.attrs = std::move(attrs);
  n.outputs = {0};
  return n;
}

}  // namespace segmux::bench
