// Seeded input values for running a graph (verification, benchmarks, route tools): the same seed gives
// the same inputs on every engine. Inputs need static shapes (error naming the input otherwise).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "core/tensor.h"
#include "ir/graph.h"
#include "models/sam31/config.h"

namespace segmux::verify {

// Floats uniform in [-1, 1), integers and bools 0 or 1 (integer inputs are often indices).
std::map<std::string, Tensor> seeded_inputs(const ir::Graph& g, uint64_t seed);

// Inputs of a SAM 3.1 candidate's contract with values a real caller could give: floats uniform in
// [-1, 1]; integer inputs named like token ids uniform in [0, vocab), other integers in {0, 1} (small
// indices or flags); booleans 50/50 but false at the first entry of every row (no all-masked softmax
// row).
std::map<std::string, Tensor> seeded_contract_inputs(const ir::Graph& g, const sam31::ModelConfig& cfg, uint64_t seed);

}  // namespace segmux::verify
