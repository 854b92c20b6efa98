// Where a compiled SAM 3.1 model comes from: a model folder (model.json + one .smx per
// sam31::compiled_files() entry), or a checkpoint compiled on first use into a cache folder keyed by
// the checkpoint, the config and this build. The only part of the pipeline that needs the compiler.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "core/cpu_cores.h"
#include "models/sam31/config.h"
#include "pipeline/backends/model.h"

namespace segmux::pipeline {

using LogFn = std::function<void(const std::string&)>;

struct ModelSource {
  std::string weights;  // .pt or .safetensors with official key names
  std::string config;   // optional model config (flat JSON, model.json's "config")
  // How `config` is read: the CLI also reads a fixture's config.json (through verification).
  std::function<sam31::ModelConfig(const std::string&)> read_config = sam31::load_config;
  std::string vocab;                 // bpe_simple_vocab_16e6.txt.gz; default: beside the weights / model
  std::string model_dir;             // a model folder (compiled candidates + model.json)
  std::string cache_dir;             // where compiled candidates are cached; default: default_cache_dir()
  std::string engine = "smx";        // "smx": our runtime on DIR/*.smx; "ort": ONNX Runtime on DIR/onnx/*.onnx
  int num_threads = usable_cores();  // the cores this process may use
  std::string precision = "fp32";    // fp32 | bf16: how checkpoint weights are compiled (compiler precision)
};

struct OpenedModel {
  std::shared_ptr<Model> model;  // shared by every session (model->new_session())
  sam31::ModelConfig config;
  std::string model_dir;    // the folder of compiled candidates in use
  std::string description;  // for logs: where the model came from
};

// Compiles (or finds cached) candidates and opens the model on them. `log` receives progress lines.
// The model serves any number of videos, each in its own session (frame counts come with each call).
OpenedModel open_model(const ModelSource& src, const LogFn& log);

// Builds every compiled file of sam31::compiled_files() from weights + config, compiles each to
// DIR/<file>.smx and writes DIR/model.json (config, vocab path, provenance). Atomic per file.
void compile_model_dir(const sam31::ModelConfig& cfg, const std::string& weights_path, const std::string& vocab_path,
                       const std::string& out_dir, const LogFn& log, const std::string& precision = "fp32");

// The model folder `dir`, made by `make(tmp_dir)` on first use: built in DIR.partial-<pid> and renamed
// into place, so an interrupted build never leaves a folder that looks complete; unfinished folders
// of processes that no longer run are removed. `what` is logged when it builds.
void ensure_model_dir(const std::string& dir, const std::function<void(const std::string& tmp_dir)>& make,
                      const std::string& what, const LogFn& log);

// $XDG_CACHE_HOME/segmux, else ~/.cache/segmux.
std::string default_cache_dir();
// Identifies this build (version, kernel ISA level, executable size and time): compiled candidates
// depend on the code that built them and the ISA they target, so cache keys include it.
std::string build_identity();
// A short stable hash for cache folder names.
uint64_t cache_hash(const std::string& key);

}  // namespace segmux::pipeline
