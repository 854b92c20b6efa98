// Seeded random tensors for tests and benchmarks: one definition (uniform floats, std::mt19937).
#pragma once
#include <random>

#include "core/tensor.h"

namespace segmux::test {

// f32 tensor of shape `s`, values uniform in [lo, hi), the same for the same seed.
inline Tensor random_tensor(const Shape& s, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::f32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

}  // namespace segmux::test
