// Opening a model on an engine: our runtime on the .smx files ("smx") or ONNX Runtime on the ONNX
// files ("ort"). A package brings its ONNX files (DIR/onnx/); a checkpoint's cache entry gets them
// exported on first use of the ORT engine.
#pragma once
#include <memory>
#include <string>

#include "deploy/model_store/model_store.h"
#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/model.h"

namespace segmux::pipeline {

// Fails with `engine "NAME" is not available: <why>` (or an unknown-engine error) unless it can run.
void require_engine(const std::string& engine);

// Builds every sam31::compiled_files() entry from the weights and writes it as standard ONNX to
// DIR/onnx/<file>.onnx, unless all are there already. Staged: DIR/onnx appears complete or not at all.
void ensure_onnx_candidates(const sam31::ModelConfig& cfg, const std::string& weights_path, const std::string& dir,
                            const LogFn& log);

// The model of src.engine on the model folder `dir` (the ONNX files exported first when the model
// comes from a checkpoint).
std::shared_ptr<Model> open_engine_model(const ModelSource& src, const sam31::ModelConfig& cfg, const std::string& dir,
                                         sam31::Tokenizer tok, const LogFn& log);

}  // namespace segmux::pipeline
