// The two-bucket golden set (tests/fixtures/sam31-tiny-two-buckets, tools/fixtures/gen_two_buckets.py):
// sam31-tiny with multiplex_count 2, so the 3 objects the detector adds on one frame fill two buckets of
// one tracker state. The set holds only the tensors whose shape depends on the multiplex count
// (weights_multiplex_overrides.safetensors); its weights are the shared sam31-tiny weights with those
// tensors replaced, written here once per test process.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"

namespace segmux::test {

inline std::string two_bucket_set_dir() {
  return std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-two-buckets";
}

// Writes base + overrides (every override must replace a base tensor) to `out`, atomically.
inline void merge_weight_overrides(const std::string& base, const std::string& overrides, const std::string& out) {
  TensorFile b = read_safetensors(base);
  TensorFile o = read_safetensors(overrides);
  for (const auto& [name, t] : o.tensors) SEGMUX_CHECK(b.has(name), overrides, ": tensor ", name, " is not in ", base);
  std::vector<std::pair<std::string, Tensor>> merged;
  for (const auto& [name, t] : b.tensors) merged.emplace_back(name, o.has(name) ? o.at(name) : t);
  write_safetensors(out, merged, b.metadata);
}

// The set's full weights (the shared weights with the set's overrides), written under `tmp` once per
// process (never a file left there by another run).
inline std::string two_bucket_weights(const std::string& tmp) {
  static const std::string out = [&] {
    const std::string path = tmp + "/segmux-two-buckets-weights.safetensors";
    merge_weight_overrides(std::string(SEGMUX_FIXTURES) + "/sam31-tiny/weights.safetensors",
                           two_bucket_set_dir() + "/weights_multiplex_overrides.safetensors", path);
    return path;
  }();
  return out;
}

}  // namespace segmux::test
