// Inside candidate_model.cpp / candidate_session.cpp: the shared, read-only part of the model (the
// config, the tokenizer, one runner per compiled file) that the sessions run their candidates on. Every
// run goes through the model's one lock: the runners share an arena (our runtime) and the tokenizer's
// cache, and a session's tensors never enter the model.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/candidate_runner.h"
#include "pipeline/backends/model.h"

namespace segmux::pipeline {

// The candidates (compiled files) the glue runs.
enum class Candidate {
  text_encoder,
  backbone,
  detector,
  interactive_decoder,
  propagation_decoder,
  memory_encoder,
  memory_encoder_image_size,  // the memory encoder on masks at the image size (interactive propagation)
  point_decoder,              // opened on the first point prompt (older model folders lack it)
  point_decoder_mask_input,   // the point decoder with a mask prompt: opened on the first image-predictor prompt
};

class CandidateModel : public Model, public std::enable_shared_from_this<CandidateModel> {
 public:
  CandidateModel(sam31::ModelConfig cfg, CandidateRunnerFactory open, sam31::Tokenizer tok);

  ModelGeometry geometry() const override;
  std::unique_ptr<ModelSession> new_session() override;

  const sam31::ModelConfig& config() const { return cfg_; }
  // The text encoder's outputs (language features, mask) for a text batch.
  std::pair<Tensor, Tensor> encode_text(const std::vector<std::string>& batch);
  // The backbone's outputs the glue reads, for a pre-processed image. Prompts are encoded before the
  // frames they apply to (and kept by the sessions): the text encoder's kernels and prepacked weights
  // (~1.2 GB at full size) are given back first, and made again for the next new prompt.
  std::map<std::string, Tensor> run_backbone(const Tensor& image);
  // One run of a candidate (errors prefixed with its file name).
  std::map<std::string, Tensor> run(Candidate c, const std::map<std::string, Tensor>& inputs);

 private:
  struct LoadedCandidate {
    std::string file;
    std::unique_ptr<CandidateRunner> impl;
  };
  LoadedCandidate& runner(Candidate c);  // the caller holds lock_
  std::map<std::string, Tensor> run_locked(Candidate c, const std::map<std::string, Tensor>& inputs);

  const sam31::ModelConfig cfg_;
  const CandidateRunnerFactory open_;
  std::mutex lock_;  // one candidate run at a time, and the tokenizer's cache
  sam31::Tokenizer tok_;
  std::map<Candidate, LoadedCandidate> runners_;
};

// A new session of `model` (candidate_session.cpp).
std::unique_ptr<ModelSession> new_candidate_session(std::shared_ptr<CandidateModel> model);

}  // namespace segmux::pipeline
