// bench_matmul: our MatMul kernel (constant B, prepacked at kernel creation) at 1024/2048/4096 square,
// f32 and bf16, vs a raw oneDNN matmul with B prepacked the same way, plus GFLOP/s and % of the FMA
// peak measured in this run (best of several runs each). Usage: bench_matmul [threads=2] [max_n=4096]
#include <omp.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "bench_common.h"

using namespace segmux;
using namespace segmux::bench;

namespace {

// Raw oneDNN: src plain (f32, or bf16 converted beforehand), weights reordered once to `any`.
double raw_onednn_seconds(const Tensor& a, const Tensor& b, bool bf16, int reps) {
  using dnnl::memory;
  using dt = memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  const dt t = bf16 ? dt::bf16 : dt::f32;
  memory::desc src_md({M, K}, t, memory::format_tag::ab);
  memory::desc wei_any({K, N}, t, memory::format_tag::any);
  memory::desc dst_md({M, N}, dt::f32, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_any, dst_md), eng);
  dnnl::matmul prim(pd);
  memory a_user({{M, K}, dt::f32, memory::format_tag::ab}, eng, const_cast<void*>(a.raw()));
  memory b_user({{K, N}, dt::f32, memory::format_tag::ab}, eng, const_cast<void*>(b.raw()));
  memory src = a_user;
  if (bf16) {
    src = memory(src_md, eng);
    dnnl::reorder(a_user, src).execute(s, a_user, src);
  }
  memory wei(pd.weights_desc(), eng);
  dnnl::reorder(b_user, wei).execute(s, b_user, wei);
  memory dst(dst_md, eng);
  s.wait();
  return time_best(
      [&] {
        prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
        s.wait();
      },
      reps);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t max_n = argc > 2 ? std::atoll(argv[2]) : 4096;
  omp_set_num_threads(threads);
  const double peak_f32 = measure_peak(false, threads), peak_bf16 = measure_peak(true, threads);
  std::printf("bench_matmul: %d thread(s)\n", threads);
  std::printf("measured peak: f32 FMA %.1f GFLOP/s, bf16 dot %.1f GFLOP/s (%d thread(s))\n", peak_f32, peak_bf16,
              threads);
  std::printf("%-6s %-5s %12s %8s %14s %8s %10s\n", "n", "type", "ours GFLOP/s", "% peak", "oneDNN GFLOP/s", "% peak",
              "ours/raw");
  for (int64_t n : {1024, 2048, 4096}) {
    if (n > max_n) break;
    Tensor a = random_f32({n, n}, 1), b = random_f32({n, n}, 2);
    const double flops = 2.0 * double(n) * double(n) * double(n);
    const int reps = n <= 1024 ? 20 : n <= 2048 ? 7 : 3;
    for (bool bf16 : {false, true}) {
      std::map<std::string, ir::AttrValue> attrs;
      if (bf16) attrs["segmux_precision"] = std::string("bf16");
      NodeRunner ours(cpu_provider(), make_node("MatMul", attrs), {a, b}, {false, true}, threads);
      const double t_ours = time_best([&] { ours.run(); }, reps);
      omp_set_num_threads(threads);
      const double t_raw = raw_onednn_seconds(a, b, bf16, reps);
      const double peak = bf16 ? peak_bf16 : peak_f32;
      const double g_ours = flops / t_ours / 1e9, g_raw = flops / t_raw / 1e9;
      std::printf("%-6lld %-5s %12.1f %7.1f%% %14.1f %7.1f%% %10.3f\n", (long long)n, bf16 ? "bf16" : "f32", g_ours,
                  100 * g_ours / peak, g_raw, 100 * g_raw / peak, t_raw / t_ours);
    }
  }
  std::printf("(bf16: our kernel includes converting A to bf16 each run; the raw peer gets A already in bf16)\n");
  return 0;
}
