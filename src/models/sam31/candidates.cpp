#include "models/sam31/candidates.h"

#include "core/error.h"
#include "models/sam31/backbone.h"
#include "models/sam31/bucket_batch.h"
#include "models/sam31/detector.h"
#include "models/sam31/interactive_decoder.h"
#include "models/sam31/memory_encoder.h"
#include "models/sam31/point_decoder.h"
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/tensor_names.h"
#include "models/sam31/text_encoder.h"

namespace segmux::sam31 {

namespace {

std::vector<std::string> backbone_outputs() {
  namespace n = names::backbone;
  std::vector<std::string> out = {n::kVitTrunk};
  for (int head = 0; head < 3; ++head)
    for (int level = 0; level < n::kLevels; ++level) out.push_back(n::fpn(n::Head(head), level));
  for (int level = 0; level < n::kLevels; ++level) out.push_back(n::pos(level));
  out.push_back(n::kHighResS0);
  out.push_back(n::kHighResS1);
  out.push_back(n::kHighResS0Cached);
  out.push_back(n::kHighResS1Cached);
  return out;
}

std::vector<Candidate> make_table() {
  namespace te = names::text_encoder;
  namespace bb = names::backbone;
  namespace det = names::detector;
  namespace id = names::interactive_decoder;
  namespace pd = names::propagation_decoder;
  namespace pt = names::point_decoder;
  namespace me = names::memory_encoder;
  return {
      {CandidateId::text_encoder,
       "text_encoder",
       "per prompt",
       {},
       {te::kTokenIds},
       {te::kLanguageFeatures, te::kLanguageMask, te::kLanguageEmbeds},
       build_text_encoder_default,
       nullptr,
       text_encoder_contract},
      {CandidateId::backbone,
       "backbone",
       "per frame",
       {kBackboneFp32MlpVariant},
       {bb::kImage},
       backbone_outputs(),
       build_backbone_default,
       build_backbone_variant,
       backbone_contract},
      {CandidateId::detector,
       "detector",
       "per frame and prompt",
       {},
       {det::fpn(0), det::fpn(1), det::fpn(2), det::kPos2, det::kLanguageFeatures, det::kLanguageMask, det::kTextIds,
        det::kBoxes, det::kBoxLabels, det::kBoxPadding},
       {det::kPredLogits, det::kPredBoxes, det::kPredBoxesXyxy, det::kPredMasks, det::kPresenceLogit, det::kQueries,
        det::kSemanticSeg},
       build_detector_default,
       nullptr,
       detector_contract},
      {CandidateId::interactive_decoder,
       "interactive_decoder",
       "per object given a mask",
       {},
       {id::kImage, id::kMask},
       {id::kObjPtr, id::kObjectScoreLogit, id::kSamObjectScoreLogit},
       build_interactive_decoder,
       nullptr,
       interactive_decoder_contract},
      {CandidateId::point_decoder,
       "point_decoder",
       "per object given points or a box",
       {kPointDecoderFeaturesVariant},
       {pt::kImage, pt::kFpn0, pt::kFpn1, pt::kPointCoords, pt::kPointLabels, pt::kPointValid, pt::kMultimask},
       {pt::kMasks, pt::kIouPred, pt::kObjectScoreLogit, pt::kBestMaskIndex, pt::kMask, pt::kIou, pt::kLowResMask,
        pt::kObjPtr},
       build_point_decoder,
       build_point_decoder_variant,
       point_decoder_contract},
      {CandidateId::propagation_decoder,
       "propagation_decoder",
       "per frame and tracker bucket",
       {},
       {pd::kImage, pd::kImagePos, pd::kHighResS0, pd::kHighResS1, pd::kMemoryMaskmem, pd::kMemoryImage,
        pd::kMemoryTposIndex, pd::kMemoryValid, pd::kObjPtrs, pd::kObjPtrTpos, pd::kObjPtrValid, pd::kSlotValid},
       {pd::kPixFeatWithMem, pd::kMasks, pd::kIouPred, pd::kObjectScoreLogits, pd::kSamTokens, pd::kObjPtr,
        pd::kBestMaskIndex},
       build_propagation_decoder,
       nullptr,
       propagation_decoder_contract},
      {CandidateId::memory_encoder,
       "memory_encoder",
       "per frame and tracker bucket",
       {kMemoryEncoderImageSizeVariant},
       {me::kPixFeat, me::kMaskLogits, me::kSlotValid, me::kSlotConditioning, me::kSlotObjectScore},
       {me::kMaskmemFeatures, me::kMaskmemFeaturesBf16},
       build_memory_encoder,
       build_memory_encoder_variant,
       memory_encoder_contract},
  };
}

}  // namespace

ir::Graph Candidate::build(const ModelConfig& cfg, const Weights& w, const std::string& variant) const {
  if (variant.empty()) return build_default(cfg, w);
  // Several buckets in one call (bucket_batch.h): "[<variant>.]buckets<B>" of a tracker candidate.
  std::string base;
  int buckets = 0;
  if (has_bucket_variants(id) && parse_bucket_variant(variant, &base, &buckets))
    return replicate_over_buckets(build(cfg, w, base), buckets, per_bucket_inputs(id));
  bool known = false;
  std::string list;
  for (const auto& v : variants) {
    known = known || v == variant;
    list += (list.empty() ? "" : ", ") + v;
  }
  SEGMUX_CHECK(known && build_variant != nullptr, "candidate ", name, " has no build variant '", variant, "'",
               list.empty() ? std::string(" (it has none)") : " (known: " + list + ")");
  return build_variant(cfg, w, variant);
}

namespace {

std::vector<std::string> port_names(const ir::Graph& g, const std::vector<int>& ports) {
  std::vector<std::string> out;
  for (int id : ports) out.push_back(g.value(id).name);
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::string Candidate::contract(const ModelConfig& cfg, const ir::Graph& default_build) const {
  const std::vector<std::string> ins = port_names(default_build, default_build.inputs);
  const std::vector<std::string> outs = port_names(default_build, default_build.outputs);
  SEGMUX_CHECK(ins == inputs, "candidate ", name, ": the graph's inputs (", joined(ins),
               ") are not the candidate table's (", joined(inputs), ")");
  SEGMUX_CHECK(outs == outputs, "candidate ", name, ": the graph's outputs (", joined(outs),
               ") are not the candidate table's (", joined(outputs), ")");
  return contract::markdown(name, describe(cfg), default_build);
}

const std::vector<Candidate>& candidates() {
  static const std::vector<Candidate> table = make_table();
  return table;
}

const Candidate& candidate(CandidateId id) {
  for (const Candidate& c : candidates())
    if (c.id == id) return c;
  fail("unknown candidate id ", int(id));
}

const Candidate* find_candidate(std::string_view name) {
  for (const Candidate& c : candidates())
    if (c.name == name) return &c;
  return nullptr;
}

std::string candidate_names() {
  std::string s;
  for (const Candidate& c : candidates()) s += (s.empty() ? "" : ", ") + c.name;
  return s;
}

const std::vector<CompiledFile>& compiled_files() {
  static const std::vector<CompiledFile> files = [] {
    std::vector<CompiledFile> v;
    for (const Candidate& c : candidates()) v.push_back({c.name, c.id, ""});
    v.push_back({"memory_encoder_image_size", CandidateId::memory_encoder, kMemoryEncoderImageSizeVariant});
    return v;
  }();
  return files;
}

}  // namespace segmux::sam31
