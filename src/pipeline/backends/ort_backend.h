// The second engine: the same model glue as candidate_model.h, with every candidate run by ONNX
// Runtime on the standard ONNX files of a package (DIR/onnx/<file>.onnx, one per
// sam31::compiled_files() entry). ONNX Runtime is optional (engines/ort/ort_model.h).
#pragma once
#include <memory>
#include <string>

#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/model.h"

namespace segmux::pipeline {

// The engines a model can run on: "smx" (our runtime, the default) and "ort".
bool is_known_engine(const std::string& engine);
// True when `engine` can run here; otherwise *why says `engine "ort" is not available: <why>`.
bool engine_available(const std::string& engine, std::string* why);

// DIR/onnx/<file>.onnx: where a package keeps the ONNX file of a compiled file.
std::string onnx_candidate_path(const std::string& model_dir, const std::string& file);

// Opens every DIR/onnx/<file>.onnx in ONNX Runtime (error naming a missing or broken file, or saying
// why the engine is not available).
std::shared_ptr<Model> open_ort_model(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                      sam31::Tokenizer tokenizer, int num_threads);

}  // namespace segmux::pipeline
