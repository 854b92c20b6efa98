#include "verify/sam31/random_checkpoint.h"

#include <cmath>

#include "io/pytorch_zip.h"

namespace segmux::verify {

using namespace segmux::sam31;

namespace {

// splitmix64: a small, fast, well-mixed generator; one stream per tensor keeps output independent of
// generation order.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void write_random_checkpoint(const std::string& path, const ModelConfig& cfg, uint64_t seed,
                             const CheckpointEdits& edits) {
  const auto table = expected_state_dict(cfg);
  std::set<std::string> known;
  for (auto& e : table) known.insert(e.key);
  auto must_know = [&](const std::string& k) {
    SEGMUX_CHECK(known.count(k), "checkpoint edit names '", k, "', which is not a key of config '", cfg.name, "'");
  };
  for (auto& k : edits.drop) must_know(k);
  for (auto& [k, n] : edits.rename) must_know(k);
  for (auto& k : edits.mis_shape) must_know(k);

  std::vector<TorchTensorSpec> specs;
  std::vector<size_t> source;  // index into table
  std::vector<bool> reshaped;
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& e = table[i];
    if (std::find(edits.drop.begin(), edits.drop.end(), e.key) != edits.drop.end()) continue;
    TorchTensorSpec spec{e.key, DType::f32, e.weights_shape(), e.complex};
    for (auto& [from, to] : edits.rename)
      if (from == e.key) spec.name = to;
    bool bad = std::find(edits.mis_shape.begin(), edits.mis_shape.end(), e.key) != edits.mis_shape.end();
    if (bad) {
      if (spec.shape.empty()) spec.shape = {1};
      spec.shape[0] += 1;
    }
    specs.push_back(spec);
    source.push_back(i);
    reshaped.push_back(bad);
  }
  write_pytorch_checkpoint_streaming(
      path, specs,
      [&](size_t k) {
        const auto& e = table[source[k]];
        const std::string block_prefix = "detector.backbone.vision_backbone.trunk.blocks.";
        if (e.complex && !reshaped[k] && ends_with(e.key, ".attn.freqs_cis") &&
            e.key.compare(0, block_prefix.size(), block_prefix) == 0) {
          const int block = std::stoi(e.key.substr(block_prefix.size()));
          return vit_rope_table(cfg, block);
        }
        Tensor t(DType::f32, specs[k].shape);
        float* p = t.data<float>();
        uint64_t state = seed * 0x100000001B3ull + source[k];
        for (int64_t i = 0; i < t.numel(); ++i) {
          // 24 random bits -> uniform [-0.05, 0.05).
          p[i] = (float(splitmix64(state) >> 40) * (1.0f / 16777216.0f) - 0.5f) * 0.1f;
        }
        return t;
      },
      "archive");
}

Tensor vit_rope_table(const ModelConfig& cfg, int block) {
  SEGMUX_CHECK(block >= 0 && block < cfg.vit_depth, "ViT block ", block, " is outside 0..", cfg.vit_depth - 1);
  const bool global = cfg.vit_block_is_global(block);
  const int end = global ? cfg.token_grid() : cfg.vit_window;
  const int dim = cfg.vit_head_dim();
  // Interpolated RoPE: global blocks see window-sized position steps (positions scaled by window/grid).
  const float scale = global ? float(double(cfg.vit_window) / double(cfg.token_grid())) : 1.0f;
  const int quarter = dim / 4;
  std::vector<float> freqs(static_cast<size_t>(quarter));
  for (int k = 0; k < quarter; ++k)
    freqs[size_t(k)] = float(1.0 / double(float(std::pow(cfg.rope_theta, double(float(4 * k) / float(dim))))));
  Tensor out(DType::f32, {int64_t(end) * end, dim / 2, 2});
  float* o = out.data<float>();
  for (int n = 0; n < end * end; ++n) {
    // The official code computes in float32: position * scale, then position * frequency.
    const float tx = float(n % end) * scale, ty = float(n / end) * scale;
    for (int half = 0; half < 2; ++half) {  // x frequencies first, then y
      const float pos = half == 0 ? tx : ty;
      for (int k = 0; k < quarter; ++k) {
        const float angle = pos * freqs[size_t(k)];
        float* z = o + (size_t(n) * size_t(dim / 2) + size_t(half * quarter + k)) * 2;
        z[0] = float(std::cos(double(angle)));
        z[1] = float(std::sin(double(angle)));
      }
    }
  }
  return out;
}

}  // namespace segmux::verify
