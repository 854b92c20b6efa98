// The backbone built at batch B (BackboneOptions::batch, what bench/bench_image_batch measures): each
// image's outputs equal the batch-1 build's on that image alone, so a batched set_image_batch would
// give every image what set_image gives it.
#include <gtest/gtest.h>

#include <cmath>

#include "models/sam31/backbone.h"
#include "models/sam31/config.h"
#include "models/sam31/weights.h"
#include "runtime/interpreter.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::sam31 {
namespace {

const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

Tensor image(int64_t S, float phase) {
  Tensor t(DType::f32, {1, 3, S, S});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * float(i) + phase);
  return t;
}

TEST(BackboneBatch, EachImageOfABatchGetsItsBatchOneOutputs) {
  const ModelConfig cfg = segmux::verify::load_fixture_config(kDir + "/config.json");
  const Weights w = Weights::load(kDir + "/weights.safetensors");
  const int64_t S = cfg.image_size;
  const Tensor a = image(S, 0.f), b = image(S, 1.3f);
  Tensor ab(DType::f32, {2, 3, S, S});
  std::copy_n(a.data<float>(), a.numel(), ab.data<float>());
  std::copy_n(b.data<float>(), b.numel(), ab.data<float>() + a.numel());
  BackboneOptions one, two;
  two.batch = 2;
  Interpreter s1(build_backbone(cfg, w, one), InterpreterOptions{1, false});
  Interpreter s2(build_backbone(cfg, w, two), InterpreterOptions{1, false});
  const auto ra = s1.run({{"image", a}}), rb = s1.run({{"image", b}}), rab = s2.run({{"image", ab}});
  int compared = 0;
  for (const auto& [name, batched] : rab) {
    const Tensor& x = ra.at(name);
    if (batched.dim(0) == 1) continue;  // constants (position encodings) keep batch 1
    ASSERT_EQ(batched.dim(0), 2) << name;
    ASSERT_EQ(batched.numel(), 2 * x.numel()) << name;
    double worst = 0, scale = 0;
    for (int k = 0; k < 2; ++k) {
      const Tensor& ref = k == 0 ? ra.at(name) : rb.at(name);
      for (int64_t i = 0; i < ref.numel(); ++i) {
        worst = std::max(worst, double(std::abs(batched.data<float>()[k * ref.numel() + i] - ref.data<float>()[i])));
        scale = std::max(scale, double(std::abs(ref.data<float>()[i])));
      }
    }
    EXPECT_LE(worst, 1e-4 * std::max(1.0, scale)) << name;
    ++compared;
  }
  EXPECT_GE(compared, 10);
}

}  // namespace
}  // namespace segmux::sam31
