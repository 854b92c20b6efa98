// The SAM 3.1 deployment candidates: ONE typed table (name, when the predictor runs it, graph builder,
// build variants, input and output names, what the written contract says beyond the graph) used by the compiler driver,
// the compiled backend, export and verification. A model folder holds one compiled file per entry of compiled_files():
// every candidate, plus the memory encoder's image-size-masks variant.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

enum class CandidateId {
  text_encoder,
  backbone,
  detector,
  interactive_decoder,
  point_decoder,
  propagation_decoder,
  memory_encoder,
};

struct Candidate {
  CandidateId id;
  std::string name;
  std::string runs;                   // when the predictor runs it ("per prompt", "per frame", ...)
  std::vector<std::string> variants;  // named build variants beside the default build ("")
  std::vector<std::string> inputs;    // graph input names, in graph order
  std::vector<std::string> outputs;   // graph output names of the default build, in graph order
  ir::Graph (*build_default)(const ModelConfig& cfg, const Weights& w);
  ir::Graph (*build_variant)(const ModelConfig& cfg, const Weights& w, const std::string& variant);  // or null
  contract::Description (*describe)(const ModelConfig& cfg);  // what the contract says beyond the graph

  // The default build ("") or a named variant; an unknown variant is an error naming the known ones.
  ir::Graph build(const ModelConfig& cfg, const Weights& w, const std::string& variant = "") const;
  // The written contract (markdown) of `default_build` (this candidate's build("") at `cfg`): names,
  // order, shapes and dtypes from the graph, the rest from describe(cfg). The graph's input and output
  // names must be this table's `inputs` and `outputs`, and every one described: an error names the first
  // that is not.
  std::string contract(const ModelConfig& cfg, const ir::Graph& default_build) const;
};

// A compiled file of a model folder: `file`.smx holds `candidate` built as `variant`.
struct CompiledFile {
  std::string file;
  CandidateId candidate;
  std::string variant;
};

// All seven, in pipeline order.
const std::vector<Candidate>& candidates();
const Candidate& candidate(CandidateId id);
// The candidate named `name`, or nullptr.
const Candidate* find_candidate(std::string_view name);
// The candidate names, comma separated (for error messages and --help).
std::string candidate_names();
// The compiled files of a model folder (eight): every candidate's default build, plus the memory
// encoder for image-size masks (frames where masks are given).
const std::vector<CompiledFile>& compiled_files();

}  // namespace segmux::sam31
