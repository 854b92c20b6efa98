// The package's written deliverables beside the models: per-candidate contracts (JSON + markdown),
// the inventory (predictor entry points and candidate boundaries), and the command lines other
// offline-model compilers take for the package's ONNX files.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"

namespace segmux::package {

// One compiled file's machine-readable signature: file names in the package, every input and output
// with dtype and static shape (from the built graph at this config).
nlohmann::json file_contract(const sam31::CompiledFile& f, const ir::Graph& g);

// contracts/<candidate>.json (+ .md) from `contracts` (candidate name -> {"files": [file_contract...]})
// and `markdown` (candidate name -> Candidate::contract of its default build), and inventory.md /
// inventory.json.
void write_route_docs(const sam31::ModelConfig& cfg, nlohmann::json contracts,
                      const std::map<std::string, std::string>& markdown, const std::string& dir);

// For one file_contract: Ascend ATC and TensorRT trtexec command lines on onnx/<file>.onnx (static
// shapes from the contract). `precision` fp32 or bf16.
std::string atc_command(const nlohmann::json& file_contract, const std::string& precision);
std::string trtexec_command(const nlohmann::json& file_contract, const std::string& precision);

}  // namespace segmux::package

namespace segmux::package {

struct ReportInputs {
  std::string command_line;
  std::string package_dir;  // as the user named it
  std::string checkpoint, checkpoint_sha256, build_identity, host_isa, started_utc;
  uint64_t checkpoint_bytes = 0;
  sam31::ModelConfig cfg;
  std::vector<std::string> precisions, isas;  // resolved; the first pair is the root
  nlohmann::json build_stages, slim;          // BuildRecord
  nlohmann::json verification;                // verification.json
  double verify_seconds = 0, total_seconds = 0;
};
// report.md: the deployment record.
std::string deploy_report(const ReportInputs& in, const std::string& dir);

}  // namespace segmux::package
