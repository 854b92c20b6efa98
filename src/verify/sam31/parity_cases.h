// The parity cases of each SAM 3.1 candidate: what `segmux parity` runs against a golden fixture folder
// (inputs and official outputs read from its modules/ and video/ files, per-output tolerances). The
// cases are read from what the folder holds (e.g. every modules/propagation_f*.safetensors present).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "models/sam31/candidates.h"
#include "models/sam31/point_decoder.h"

namespace segmux::verify {

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
  std::string label;                              // e.g. "propagation_f010"
  std::map<std::string, Tensor> inputs;           // by candidate input name
  std::map<std::string, Tensor> expected;         // by candidate output name (subset of outputs allowed)
  std::map<std::string, Tolerance> tolerance;     // per output; missing -> default Tolerance
  std::string variant;                            // "" = the candidate's default build; else a named variant
  std::map<std::string, OutputSelection> select;  // per output; missing -> the whole output
};

// The cases of one candidate from a fixture folder.
std::vector<ParityCase> parity_cases(sam31::CandidateId id, const std::string& fixture_dir,
                                     const sam31::ModelConfig& cfg);

// Per candidate (also used directly by the candidates' unit tests).
std::vector<ParityCase> text_encoder_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
std::vector<ParityCase> backbone_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
// The detector's cases: the text groundings (modules/detector.safetensors) and the box-exemplar ones
// (modules/detector_exemplar_*.safetensors, detector_exemplar_parity.cpp), whichever the folder holds.
std::vector<ParityCase> detector_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
std::vector<ParityCase> detector_exemplar_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
std::vector<ParityCase> interactive_decoder_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
// Every modules/interactive_*.safetensors (none: no cases), through the `features` variant.
std::vector<ParityCase> point_decoder_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
// The clicks of an interactive_* fixture file (model-input pixels, labels).
sam31::PointPrompt point_decoder_fixture_prompt(const TensorFile& f);
std::vector<ParityCase> propagation_decoder_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);
std::vector<ParityCase> memory_encoder_parity_cases(const std::string& fixture_dir, const sam31::ModelConfig& cfg);

// The module files of a fixture folder whose names start with `prefix` (modules/<prefix>*.safetensors),
// as labels (file names without extension), sorted. Error naming the folder when there is none.
std::vector<std::string> fixture_modules(const std::string& fixture_dir, const std::string& prefix);
// Whether the folder holds any modules/<prefix>*.safetensors.
bool has_fixture_modules(const std::string& fixture_dir, const std::string& prefix);
// Whether the folder holds the files a candidate's cases are read from (a fixture set made for other
// requests, e.g. image cases only, holds no tracker files): `segmux parity DIR` checks what is there.
bool fixture_has_cases(sam31::CandidateId id, const std::string& fixture_dir);

}  // namespace segmux::verify
