// The five deployment candidates and how `segmux parity` checks each against a fixture folder.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

// The bar an output must meet (issue 3): cosine, max abs relative to a scale, optional mask IoU.
struct Tolerance {
  double min_cosine = 0.99999;
  double max_abs_over_scale = 1e-4;  // max|a-b| <= this * scale
  bool scale_is_max_ref = true;      // scale = max|ref|; else scale = max(1, max|ref|)
  bool check_mask_iou = false;       // threshold both at 0, IoU >= min_mask_iou
  double min_mask_iou = 0.99;
};

// Compare only some entries of an output: it is indexed along `axis` with `indices` first (e.g. the
// masks of the few queries a fixture stored).
struct OutputSelection {
  int axis = 0;
  std::vector<int64_t> indices;
};

struct ParityCase {
  std::string label;                           // e.g. "propagation_f010"
  std::map<std::string, Tensor> inputs;        // by candidate input name
  std::map<std::string, Tensor> expected;      // by candidate output name (subset of outputs allowed)
  std::map<std::string, Tolerance> tolerance;  // per output; missing -> default Tolerance
  std::string variant;                         // "" = the candidate's build; else built by CandidateDef::build_variant
  std::map<std::string, OutputSelection> select;  // per output; missing -> the whole output
};

struct CandidateDef {
  std::string name;  // text_encoder, backbone, detector, propagation_decoder, memory_encoder
  ir::Graph (*build)(const ModelConfig& cfg, const Weights& w);
  // Reads the fixture folder (modules/*.safetensors) and returns the cases to run.
  std::vector<ParityCase> (*parity_cases)(const std::string& fixture_dir, const ModelConfig& cfg);
  std::string (*contract_markdown)(const ModelConfig& cfg);  // the written contract
  // Optional: builds a named variant (e.g. the backbone's "fp32_mlp") for cases that ask for one.
  ir::Graph (*build_variant)(const ModelConfig& cfg, const Weights& w, const std::string& variant) = nullptr;
};

// All five, in pipeline order. Defined in candidates.cpp.
const std::vector<CandidateDef>& all_candidates();

}  // namespace segmux::sam31
