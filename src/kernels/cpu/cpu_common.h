// Shared pieces of the optimized CPU kernels: threading (OpenMP, the runtime oneDNN uses on Debian, so
// one pool serves both) and small helpers. Baseline code only: the vector math of each instruction set
// is in avx512_math.h / portable_math.h. Internal to src/kernels/cpu.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace segmux::cpu {

// Threads for this run: what the session asks for, at least 1.
inline int threads_of(int requested) { return std::max(1, requested); }

// Runs fn(begin, end) over [0, n) split into contiguous chunks, one per thread. fn must not throw.
template <typename Fn>
void parallel_chunks(int64_t n, int num_threads, Fn&& fn) {
  int nt = int(std::min<int64_t>(threads_of(num_threads), std::max<int64_t>(n, 1)));
  if (nt <= 1 || n <= 1) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = std::min<int64_t>(n, t * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) fn(b, e);
  }
}

// Runs fn(i, thread_index) for i in [0, n) with dynamic scheduling (uneven work items).
template <typename Fn>
void parallel_items(int64_t n, int num_threads, Fn&& fn) {
  int nt = int(std::min<int64_t>(threads_of(num_threads), std::max<int64_t>(n, 1)));
  if (nt <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) fn(i, omp_get_thread_num());
}

// A buffer that is allocated once and reused (first touch of fresh memory is slow on our VMs).
struct Scratch {
  std::unique_ptr<float[]> data;
  size_t size = 0;
  float* get(size_t n) {
    if (n > size) {
      data.reset(new float[n]);
      size = n;
    }
    return data.get();
  }
};

// round_to_bf16 (core/dtype.h) over a run, written branch-free so that it vectorizes: the same values,
// NaNs included (quieted, sign and top payload kept).
inline void round_run_to_bf16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, &x[i], 4);
    const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    const uint32_t quiet_nan = (b & 0xffff0000u) | 0x00400000u;
    const uint32_t r = int32_t(b & 0x7fffffffu) > int32_t(0x7f800000u) ? quiet_nan : rounded;
    std::memcpy(&y[i], &r, 4);
  }
}

}  // namespace segmux::cpu
