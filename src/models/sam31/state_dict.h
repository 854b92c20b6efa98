// The SAM 3.1 state dict a config implies (every key with its shape, in the official state_dict order),
// and the check of a Weights set against it: ONE error listing every missing, unexpected and
// mis-shaped key. For the full-size config the derived table equals the official one
// (fixtures: official_fullsize_state_dict_shapes.json, 1,623 entries).
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/config.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

struct ExpectedTensor {
  std::string key;
  Shape shape;           // as the official checkpoint stores it (complex: without the (real, imag) dim)
  bool complex = false;  // complex64 RoPE table; in Weights it is f32 with a trailing dimension 2
  // The shape and dtype a Weights entry must have: f32, `shape` (+ [2] when complex).
  Shape weights_shape() const;
  std::string dtype_name() const { return complex ? "complex64" : "float32"; }
};

// Every state-dict entry of the SAM 3.1 multiplex video model built with `cfg` (the freqs_cis_real/
// imag buffers the official build recreates are not part of it, as in the released checkpoint).
std::vector<ExpectedTensor> expected_state_dict(const ModelConfig& cfg);

struct WeightsProblems {
  std::vector<std::string> missing;     // expected, absent
  std::vector<std::string> unexpected;  // present, not expected
  std::vector<std::string> mis_shaped;  // "key: f32 [..] where f32 [..] expected"
  bool ok() const { return missing.empty() && unexpected.empty() && mis_shaped.empty(); }
  std::string message(size_t max_listed_per_kind = 50) const;
};

WeightsProblems compare_weights(const Weights& w, const ModelConfig& cfg);
// Throws one segmux::Error naming every problem (up to 50 keys of each kind, with the counts).
void check_weights(const Weights& w, const ModelConfig& cfg);

}  // namespace segmux::sam31
