// The SAM 3.1 model over its compiled files: one CandidateRunner per sam31::compiled_files() entry,
// whatever engine runs them (our runtime on the .smx files here, ONNX Runtime in ort_backend.h), with
// the glue every engine shares (text and frame caches, the tracker memory banks in mux space, the
// multiplex buckets) in the sessions it makes. Needs only the runtime: no compiler, no ONNX.
#pragma once
#include <memory>
#include <string>

#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/candidate_runner.h"
#include "pipeline/backends/model.h"

namespace segmux::pipeline {

// The model with `open` giving the runner of each compiled file (called for every file now, and again
// for candidates loaded on first use: point prompts). The frame count the object-pointer temporal
// encodings use comes with each call (TrackerStateView::num_frames), so one model serves videos of any
// length and live streams whose count grows.
std::shared_ptr<Model> open_candidate_model(const sam31::ModelConfig& cfg, const CandidateRunnerFactory& open,
                                            sam31::Tokenizer tokenizer);

// Our runtime on the .smx files of `model_dir` (error naming the missing or broken one), the
// candidates sharing one arena (they run one at a time). `verified_memo_dir`: where memos of files
// verified in full are kept (LoadOptions; "" verifies every file in full).
std::shared_ptr<Model> open_smx_model(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                      sam31::Tokenizer tokenizer, int num_threads,
                                      const std::string& verified_memo_dir = "");

}  // namespace segmux::pipeline
