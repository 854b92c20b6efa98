// The deployment candidates in pipeline order. Each entry: name, graph builder, parity cases from a
// fixture folder, written contract (and optionally named build variants).
#include "models/sam31/backbone.h"
#include "models/sam31/candidate.h"
#include "models/sam31/detector.h"
#include "models/sam31/text_encoder.h"

namespace segmux::sam31 {

const std::vector<CandidateDef>& all_candidates() {
  static const std::vector<CandidateDef> defs = {
      {"text_encoder", build_text_encoder_default, text_encoder_parity_cases, text_encoder_contract},
      {"backbone", build_backbone_default, backbone_parity_cases, backbone_contract, build_backbone_variant},
      {"detector", build_detector_default, detector_parity_cases, detector_contract},
      // The tracker candidates (propagation_decoder, memory_encoder) are added here by their author.
  };
  return defs;
}

}  // namespace segmux::sam31
