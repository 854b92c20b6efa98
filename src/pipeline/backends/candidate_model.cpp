// The shared part of the model over its compiled files: runners, tokenizer, the run lock.
#include "pipeline/backends/candidate_model.h"

#include "core/error.h"
#include "models/sam31/candidates.h"
#include "models/sam31/memory_encoder.h"
#include "models/sam31/point_decoder.h"
#include "models/sam31/tensor_names.h"
#include "pipeline/backends/candidate_parts.h"
#include "pipeline/backends/smx_runner.h"
#include "runtime/offline_model.h"

namespace segmux::pipeline {

namespace {

struct CandidateFile {
  sam31::CandidateId id;
  std::string variant;
};

CandidateFile file_of(Candidate c) {
  using sam31::CandidateId;
  switch (c) {
    case Candidate::text_encoder:
      return {CandidateId::text_encoder, ""};
    case Candidate::backbone:
      return {CandidateId::backbone, ""};
    case Candidate::detector:
      return {CandidateId::detector, ""};
    case Candidate::interactive_decoder:
      return {CandidateId::interactive_decoder, ""};
    case Candidate::propagation_decoder:
      return {CandidateId::propagation_decoder, ""};
    case Candidate::memory_encoder:
      return {CandidateId::memory_encoder, ""};
    case Candidate::memory_encoder_image_size:
      return {CandidateId::memory_encoder, sam31::kMemoryEncoderImageSizeVariant};
    case Candidate::point_decoder:
      return {CandidateId::point_decoder, ""};
    case Candidate::point_decoder_mask_input:
      return {CandidateId::point_decoder, sam31::kPointDecoderMaskInputVariant};
  }
  fail("unknown candidate");
}

// Only what the glue reads is returned: the backbone's other outputs (vit_trunk, the position
// encodings and propagation features of levels 0 and 1: ~0.25 GB per frame at full size) stay in the
// arena.
std::vector<std::string> backbone_outputs_read(const CandidateRunner& backbone) {
  namespace bb = sam31::names::backbone;
  std::vector<std::string> out = {bb::pos(2), bb::fpn(bb::kPropagationHead, 2), bb::kHighResS0, bb::kHighResS1};
  for (int l = 0; l < 3; ++l) {
    out.push_back(bb::fpn(bb::kDetHead, l));
    out.push_back(bb::fpn(bb::kInteractiveHead, l));
  }
  // The bf16-rounded high-resolution features of the propagation after clicks (models compiled before
  // they existed lack them; the glue then uses the unrounded ones).
  for (const char* cached : {bb::kHighResS0Cached, bb::kHighResS1Cached})
    if (backbone.has_output(cached)) out.push_back(cached);
  return out;
}

}  // namespace

CandidateModel::CandidateModel(sam31::ModelConfig cfg, CandidateRunnerFactory open, sam31::Tokenizer tok)
    : cfg_(std::move(cfg)), open_(std::move(open)), tok_(std::move(tok)) {
  for (Candidate c : {Candidate::text_encoder, Candidate::backbone, Candidate::detector, Candidate::interactive_decoder,
                      Candidate::propagation_decoder, Candidate::memory_encoder, Candidate::memory_encoder_image_size})
    runner(c);
  LoadedCandidate& bb = runner(Candidate::backbone);
  bb.impl->set_wanted_outputs(backbone_outputs_read(*bb.impl));
  namespace det = sam31::names::detector;
  runner(Candidate::detector)
      .impl->set_wanted_outputs({det::kPredLogits, det::kPredBoxesXyxy, det::kPredMasks, det::kPresenceLogit});
}

ModelGeometry CandidateModel::geometry() const {
  return {cfg_.image_size, cfg_.low_res_mask_size(), cfg_.input_mask_size()};
}

std::unique_ptr<ModelSession> CandidateModel::new_session() { return new_candidate_session(shared_from_this()); }

CandidateModel::LoadedCandidate& CandidateModel::runner(Candidate c) {
  auto it = runners_.find(c);
  if (it != runners_.end()) return it->second;
  const CandidateFile want = file_of(c);
  for (const sam31::CompiledFile& f : sam31::compiled_files())
    if (f.candidate == want.id && f.variant == want.variant)
      return runners_.emplace(c, LoadedCandidate{f.file, open_(f)}).first->second;
  fail("no compiled file for candidate ", sam31::candidate(want.id).name, " variant '", want.variant, "'");
}

std::map<std::string, Tensor> CandidateModel::run_locked(Candidate c, const std::map<std::string, Tensor>& inputs) {
  LoadedCandidate& r = runner(c);
  try {
    return r.impl->run(inputs);
  } catch (const Error& e) {
    fail(r.file, ": ", e.what());
  }
}

std::map<std::string, Tensor> CandidateModel::run(Candidate c, const std::map<std::string, Tensor>& inputs) {
  std::lock_guard<std::mutex> hold(lock_);
  return run_locked(c, inputs);
}

std::pair<Tensor, Tensor> CandidateModel::encode_text(const std::vector<std::string>& batch) {
  std::lock_guard<std::mutex> hold(lock_);
  namespace te = sam31::names::text_encoder;
  auto out = run_locked(Candidate::text_encoder, {{te::kTokenIds, tok_.tokenize(batch)}});
  return {out.at(te::kLanguageFeatures), out.at(te::kLanguageMask)};
}

std::map<std::string, Tensor> CandidateModel::run_backbone(const Tensor& image) {
  std::lock_guard<std::mutex> hold(lock_);
  runner(Candidate::text_encoder).impl->release();
  namespace bb = sam31::names::backbone;
  return run_locked(Candidate::backbone, {{bb::kImage, image}});
}

std::shared_ptr<Model> open_candidate_model(const sam31::ModelConfig& cfg, const CandidateRunnerFactory& open,
                                            sam31::Tokenizer tokenizer) {
  return std::make_shared<CandidateModel>(cfg, open, std::move(tokenizer));
}

std::shared_ptr<Model> open_smx_model(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                      sam31::Tokenizer tokenizer, int num_threads,
                                      const std::string& verified_memo_dir) {
  ExecutorOptions ex{num_threads, true};
  // The candidates run one after another: one arena of the largest plan instead of one per candidate.
  ex.shared_arena = std::make_shared<SharedArena>();
  // By value: the model keeps the factory for candidates it loads later (point prompts).
  LoadOptions load;
  load.verified_memo_dir = verified_memo_dir;
  auto open = [model_dir, ex, load](const sam31::CompiledFile& f) -> std::unique_ptr<CandidateRunner> {
    return open_smx_runner(model_dir + "/" + f.file + ".smx", ex, load);
  };
  return open_candidate_model(cfg, open, std::move(tokenizer));
}

}  // namespace segmux::pipeline
