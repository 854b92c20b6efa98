#include "verify/seeded_inputs.h"

#include <algorithm>
#include <random>

#include "core/error.h"

namespace segmux::verify {

namespace {
// A zero tensor of an input's static shape (error naming the input if it has none).
Tensor input_tensor(const ir::Value& val) {
  bool known = val.has_shape;
  for (int64_t d : val.shape) known = known && d >= 0;
  SEGMUX_CHECK(known, "graph input '", val.name,
               "' has no fixed shape (segmux run, bench and check take one with --input-shape)");
  return Tensor(val.dtype, val.shape);
}
}  // namespace

std::map<std::string, Tensor> seeded_inputs(const ir::Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, Tensor> out;
  for (int v : g.inputs) {
    const ir::Value& val = g.value(v);
    Tensor t = input_tensor(val);
    std::uniform_real_distribution<double> uf(-1.0, 1.0);
    std::uniform_int_distribution<int> ui(0, 1);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, dtype_is_float(val.dtype) ? uf(rng) : ui(rng));
    out[val.name] = std::move(t);
  }
  return out;
}

std::map<std::string, Tensor> seeded_contract_inputs(const ir::Graph& g, const sam31::ModelConfig& cfg, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, Tensor> out;
  for (int v : g.inputs) {
    const ir::Value& val = g.value(v);
    Tensor t = input_tensor(val);
    const int64_t row = val.shape.empty() ? 1 : std::max<int64_t>(1, val.shape.back());
    const bool token_ids = val.name.find("token") != std::string::npos;
    std::uniform_real_distribution<double> uf(-1.0, 1.0);
    std::uniform_int_distribution<int> bit(0, 1), vocab(0, cfg.vocab_size - 1);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype_is_float(val.dtype))
        t.set_from_double(i, uf(rng));
      else if (val.dtype == DType::boolean)
        t.set_from_double(i, i % row == 0 ? 0 : bit(rng));
      else
        t.set_from_double(i, token_ids ? vocab(rng) : bit(rng));
    }
    out[val.name] = std::move(t);
  }
  return out;
}

}  // namespace segmux::verify
