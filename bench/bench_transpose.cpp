// bench_transpose: the Transpose CPU kernel at the layouts the full-size candidates run (from
// sam31::ModelConfig: the ViT's windowed and global q / k / v split and head merge, window partition,
// the propagation decoder's memory keys), in GB/s (one read and one write of the tensor) against a
// memcpy of the same bytes in the same run. Usage: bench_transpose [threads=2] [reps=15]
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "bench_common.h"
#include "models/sam31/config.h"

using namespace segmux;
using namespace segmux::bench;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 15;
  omp_set_num_threads(threads);
  print_load();
  const sam31::ModelConfig cfg;
  const int64_t grid = cfg.token_grid(), win = cfg.vit_window, nw = (grid + win - 1) / win;
  const int64_t VH = cfg.vit_heads, vhd = cfg.vit_head_dim(), C = VH * vhd, L = grid * grid;
  const int64_t H = cfg.attn_heads, hd = cfg.d_model / cfg.attn_heads;
  struct Case {
    const char* name;
    Shape in;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {"ViT windowed qkv split", {nw * nw, win * win, 3, VH, vhd}, {2, 0, 3, 1, 4}},
      {"ViT global qkv split", {1, L, 3, VH, vhd}, {2, 0, 3, 1, 4}},
      {"ViT windowed head merge", {nw * nw, VH, win * win, vhd}, {0, 2, 1, 3}},
      {"ViT window partition", {1, nw, win, nw, win, C}, {0, 1, 3, 2, 4, 5}},
      {"decoder memory keys, 10 slots", {1, 10, L, H, hd}, {0, 3, 1, 2, 4}},
      {"decoder heads split", {1, L, H, hd}, {0, 2, 1, 3}},
  };
  std::printf("bench_transpose: %d thread(s), f32; GB/s counts one read and one write\n", threads);
  std::printf("%-32s %-26s %10s %10s %10s %10s\n", "case", "input", "ms", "GB/s", "memcpy ms", "% memcpy");
  for (const Case& c : cases) {
    Tensor x = random_f32(c.in, 1);
    NodeRunner tr(cpu_provider(), make_node("Transpose", {{"perm", c.perm}}), {x}, {false}, threads);
    const double t = time_best([&] { tr.run(); }, reps);
    std::vector<float> dst(size_t(x.numel()));
    const float* src = x.data<float>();
    const int64_t n = x.numel();
    const double tm = time_best(
        [&] {
          std::vector<std::thread> pool;
          for (int p = 0; p < threads; ++p)
            pool.emplace_back([&, p] {
              const int64_t b = n * p / threads, e = n * (p + 1) / threads;
              std::memcpy(dst.data() + b, src + b, size_t(e - b) * sizeof(float));
            });
          for (std::thread& th : pool) th.join();
        },
        reps);
    const double gb = 2.0 * double(x.nbytes()) / 1e9;
    std::printf("%-32s %-26s %10.2f %10.1f %10.2f %9.0f%%\n", c.name, shape_str(c.in).c_str(), 1e3 * t, gb / t,
                1e3 * tm, 100 * tm / t);
  }
  return 0;
}
