// Launch-shape arithmetic of the CUDA kernels: plain C++ (host-tested without a GPU, tests/runtime_cuda).
#pragma once
#include <algorithm>
#include <cstdint>

namespace segmux::cuda {

constexpr int kElementwiseThreads = 256;
constexpr int64_t kMaxGridBlocks = 65535LL * 8;  // grid-stride loops cover the rest

// Blocks of a grid-stride element-wise launch over n elements (>= 1 so that n = 0 still launches
// nothing harmful).
constexpr int64_t elementwise_blocks(int64_t n) {
  return std::clamp<int64_t>((n + kElementwiseThreads - 1) / kElementwiseThreads, 1, kMaxGridBlocks);
}

// Row kernels (LayerNorm, Softmax): one block per row, threads a power of two between 32 and 1024 that
// covers the row once when it can.
constexpr int row_threads(int64_t cols) {
  int t = 32;
  while (t < 1024 && t < cols) t *= 2;
  return t;
}

// Attention: one warp per query row, kAttentionRowsPerBlock rows per block.
constexpr int kAttentionRowsPerBlock = 4;
constexpr int64_t attention_blocks(int64_t batch, int64_t lq) {
  return (batch * lq + kAttentionRowsPerBlock - 1) / kAttentionRowsPerBlock;
}
// Head values each lane keeps (head size up to 32 * this).
constexpr int attention_values_per_lane(int64_t head) { return int((head + 31) / 32); }

// Bytes of a device buffer holding `bytes`, rounded up to the allocation granule the executor uses so
// that every planned offset stays 256-byte aligned for vector loads.
constexpr size_t kDeviceAlignment = 256;
constexpr size_t device_bytes(size_t bytes) {
  return std::max<size_t>(kDeviceAlignment, (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment);
}

}  // namespace segmux::cuda
