// The deployment candidates in pipeline order. Each entry: name, graph builder, parity cases from a
// fixture folder, written contract (and optionally named build variants).
#include "models/sam31/backbone.h"
#include "models/sam31/candidate.h"
#include "models/sam31/detector.h"
#include "models/sam31/interactive_decoder.h"
#include "models/sam31/memory_encoder.h"
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/text_encoder.h"

namespace segmux::sam31 {

const std::vector<CandidateDef>& all_candidates() {
  static const std::vector<CandidateDef> defs = {
      {"text_encoder", build_text_encoder_default, text_encoder_parity_cases, text_encoder_contract},
      {"backbone", build_backbone_default, backbone_parity_cases, backbone_contract, build_backbone_variant},
      {"detector", build_detector_default, detector_parity_cases, detector_contract},
      {"propagation_decoder", build_propagation_decoder, propagation_decoder_parity_cases,
       propagation_decoder_contract},
      {"interactive_decoder", build_interactive_decoder, interactive_decoder_parity_cases,
       interactive_decoder_contract},
      {"memory_encoder", build_memory_encoder, memory_encoder_parity_cases, memory_encoder_contract,
       build_memory_encoder_variant},
  };
  return defs;
}

}  // namespace segmux::sam31
