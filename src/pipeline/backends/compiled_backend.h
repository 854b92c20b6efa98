// The product backend: the compiled SAM 3.1 candidates (.smx files of a model folder, one per
// sam31::compiled_files() entry) behind the control plane's ModelBackend interface, with the tracker
// memory bank kept per tracker state in mux space. Needs only the runtime: no compiler, no ONNX.
#pragma once
#include <memory>
#include <string>

#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/backend.h"
#include "pipeline/backends/candidate_runner.h"

namespace segmux::pipeline {

// Loads every compiled file of `model_dir` (error naming the missing or broken one). The frame count
// the object-pointer temporal encodings use comes with each call (TrackerStateView::num_frames), so
// one backend serves videos of any length and live streams whose count grows. `verified_memo_dir`:
// where memos of files verified in full are kept (LoadOptions; "" verifies every file in full).
std::unique_ptr<ModelBackend> open_compiled_backend(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                                    sam31::Tokenizer tokenizer, int num_threads,
                                                    const std::string& verified_memo_dir = "");

// The same glue on any engine: `open` gives the runner of each compiled file.
std::unique_ptr<ModelBackend> open_backend(const sam31::ModelConfig& cfg, const CandidateRunnerFactory& open,
                                           sam31::Tokenizer tokenizer);

}  // namespace segmux::pipeline
