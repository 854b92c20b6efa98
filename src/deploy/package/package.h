// Deployment packages: one self-contained folder per checkpoint + config that IS a model folder
// (`--model PKG` runs it) and carries the route's deliverables (docs/deploy.md):
//   model.json                 config + RELATIVE paths (vocab: tokenizer/<file>)
//   <file>.smx                 one per sam31::compiled_files() entry, first precision and target requested
//   compiled/<precision>-<isa>/<file>.smx (+ model.json)   every other precision/target requested
//   onnx/<file>.onnx (+ .onnx.data when large), onnx/<file>.slim.onnx
//   contracts/<candidate>.json + .md, tokenizer/<vocab>, inventory.md/.json
//   verification.md/.json, report.md (written by the deploy command, which has the verifier)
//   manifest.json              every other file's sha256 and size, versions, checkpoint hash, config
// The model cache stores the runtime part of the same layout (model.json, .smx, tokenizer/, manifest).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/sam31/config.h"

namespace segmux::package {

using LogFn = std::function<void(const std::string&)>;

extern const char* const kVersion;  // "segmux-" + project(VERSION) in CMakeLists.txt
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kPackageFormat = "segmux-package-1";

struct PackageOptions {
  std::string checkpoint;                          // .pt / .safetensors
  std::string checkpoint_sha256;                   // when already known (the cache's memo); else computed
  std::string vocab;                               // the tokenizer vocabulary (copied to tokenizer/); empty: none
  std::vector<std::string> precisions = {"fp32"};  // fp32 | bf16; the first goes to the root
  std::vector<std::string> targets = {"native"};   // native | generic | x86-64-avx512; the first to the root
  bool route_files = true;   // onnx/, contracts/, inventory (deploy); false: runtime only (the cache)
  bool smx_files = true;     // the .smx files; false: none (the ONNX Runtime engine's cache entries)
  bool onnx_files = false;   // onnx/<file>.onnx even without route_files (same)
  std::string command_line;  // how this package was made, recorded in every .smx and the manifest
};

// What build_package did, for report.md: per stage seconds, per compiled file node counts.
struct BuildRecord {
  nlohmann::json stages = nlohmann::json::array();  // {"stage", "file", "seconds", ...}
  nlohmann::json slim = nlohmann::json::array();    // {"file", "nodes_before", "nodes_after"}
  std::vector<std::string> variant_dirs;            // "" (root) and "compiled/<precision>-<isa>"
  std::string checkpoint_sha256;
  double seconds = 0;
};

// The ISA folder name a --target means on this machine (native -> host ISA).
std::string resolve_target(const std::string& target);
// Checks the lists (known names, no duplicates after resolving); error naming the bad entry.
void check_variant_lists(const std::vector<std::string>& precisions, const std::vector<std::string>& targets);

// Builds everything but verification, report and manifest into `dir` (created).
BuildRecord build_package(const sam31::ModelConfig& cfg, const PackageOptions& opt, const std::string& dir,
                          const LogFn& log);

// model.json: the config, the vocabulary as a path relative to the folder, provenance without paths.
void write_model_json(const std::string& dir, const sam31::ModelConfig& cfg, const std::string& vocab_rel,
                      const nlohmann::json& provenance);
// Reads DIR/model.json: the config and the vocabulary path (relative ones resolved against DIR; an
// absolute one, as folders made before packages hold, is kept; empty when none is recorded).
void read_model_json(const std::string& dir, sam31::ModelConfig& cfg, std::string& vocab);

// manifest.json: every regular file under `dir` but the manifest itself, with sha256 and size, plus
// `info` (versions, checkpoint, config ...). Written last, atomically.
void write_manifest(const std::string& dir, const nlohmann::json& info);

struct ManifestCheck {
  std::vector<std::string> problems;  // one line per bad file, naming it
  int files_checked = 0;
  uint64_t bytes_checked = 0;
  bool ok() const { return problems.empty(); }
};
// Checks `dir` against its manifest: missing, truncated/grown, modified files; files the manifest
// does not list; symbolic links and anything not a regular file or folder; manifest paths that are
// absolute or leave the folder. `hashes` false: sizes only (quick). `only`: check just the listed files
// it accepts (missing, size, hash), nothing else (what a run reads: runtime_file).
ManifestCheck check_manifest(const std::string& dir, bool hashes = true,
                             const std::function<bool(const std::string&)>& only = nullptr);
// The files `--model PKG` reads: model.json, the root's .smx files, tokenizer/.
bool runtime_file(const std::string& rel);
// The files `--model PKG --engine ort` reads: model.json, tokenizer/, onnx/<file>.onnx and the external
// data beside it (<file>.onnx.data), not the slim ONNX.
bool ort_runtime_file(const std::string& rel);
// The manifest, read as untrusted JSON (error naming the file when absent or malformed).
nlohmann::json read_manifest(const std::string& dir);

// Moves a finished staging folder to `dest` (which must not exist, or is replaced when `replace`).
void move_into_place(const std::string& staged, const std::string& dest, bool replace);

}  // namespace segmux::package
