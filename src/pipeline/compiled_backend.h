// The ModelBackend that runs the five compiled SAM 3.1 candidates (the product path), and how a model
// is found: from a checkpoint (compiled on first use and cached), from a folder of compiled
// candidates, or the built-in tiny random-weight demo model.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/sam31/config.h"
#include "pipeline/backend.h"

namespace segmux::pipeline {

struct ModelSource {
  std::string weights;    // .pt or .safetensors with official key names
  std::string config;     // optional model config (flat JSON or a fixtures config.json)
  std::string vocab;      // bpe_simple_vocab_16e6.txt.gz; default: beside the weights / model
  std::string model_dir;  // a folder of compiled candidates (written by `segmux compile-model`)
  std::string cache_dir;  // where compiled candidates are cached; default ~/.cache/segmux
  bool demo = false;      // built-in tiny random-weight model (meaningless masks)
  int num_threads = 2;
};

struct OpenedModel {
  std::unique_ptr<ModelBackend> backend;
  sam31::ModelConfig config;
  std::string model_dir;    // the folder of compiled candidates in use
  std::string description;  // for logs: where the model came from
};

// Compiles (or finds cached) candidates and opens a backend on them. `log` receives progress lines.
// num_frames: frames of the video the backend will serve (object-pointer temporal encodings use it).
OpenedModel open_model(const ModelSource& src, int num_frames, const std::function<void(const std::string&)>& log);

// The names of the compiled files in a model folder (one per candidate, plus the memory encoder for
// image-size masks used on frames where masks are given).
std::vector<std::string> model_dir_files();

// The tiny configuration of the built-in demo model (the fixtures' reduced sizes).
sam31::ModelConfig demo_config();

// Builds the five candidates from weights + config, compiles each to DIR/<name>.smx and writes
// DIR/model.json (config, vocab path, provenance). Atomic per file.
void compile_model_dir(const sam31::ModelConfig& cfg, const std::string& weights_path, const std::string& vocab_path,
                       const std::string& out_dir, const std::function<void(const std::string&)>& log);

}  // namespace segmux::pipeline
