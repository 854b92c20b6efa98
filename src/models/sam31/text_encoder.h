// Candidate `text_encoder`: SAM 3.1 VETextEncoder (CLIP-style causal transformer + resizer) as an IR
// graph. Token ids [B, ctx] int64 -> language_features (ctx,B,D), language_mask (B,ctx) bool
// (True = pad), language_embeds (ctx,B,W). B is fixed per compiled model (the video run encodes 3:
// [prompt, "visual", "geometric"]).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

struct TextEncoderOptions {
  int batch = 3;
};

ir::Graph build_text_encoder(const ModelConfig& cfg, const Weights& w, const TextEncoderOptions& opt = {});
// Candidate entry points (candidates.cpp).
ir::Graph build_text_encoder_default(const ModelConfig& cfg, const Weights& w);
contract::Description text_encoder_contract(const ModelConfig& cfg);

}  // namespace segmux::sam31
