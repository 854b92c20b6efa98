// Candidate `backbone`: the SAM 3.1 vision backbone as an IR graph. Normalised image [1,3,S,S] f32 ->
// ViT trunk (patch embed without bias, tiled absolute position embedding, ln_pre, windowed / global
// blocks with 2-D axial RoPE, official bf16 fc1+GELU) -> TriHead ViTDet neck: the detector head
// (`convs`), the interactive head (`interactive_convs`) and the propagation head (`propagation_convs`),
// three levels each, plus the DETR sine position encodings of the levels (shared by the heads) and the
// tracker's conv_s0 / conv_s1 applied to propagation levels 0 / 1 (what the propagation decoder's
// mask decoder takes as high-res features).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

struct BackboneOptions {
  // false: the official path, fc1 + GELU on bf16 copies of x, W, b with a bf16 result (Cast ops).
  // true: fc1 + GELU in fp32 (matches the fixture's variant_fp32_mlp.out.vit_trunk).
  bool fp32_mlp = false;
  // Also output the interactive head (3 levels) and the tracker high-res features.
  bool interactive_head = true;
  bool tracker_high_res = true;
};

ir::Graph build_backbone(const ModelConfig& cfg, const Weights& w, const BackboneOptions& opt = {});
// Candidate entry points (candidates.cpp). Variant kBackboneFp32MlpVariant builds with opt.fp32_mlp = true.
inline constexpr const char* kBackboneFp32MlpVariant = "fp32_mlp";
ir::Graph build_backbone_default(const ModelConfig& cfg, const Weights& w);
ir::Graph build_backbone_variant(const ModelConfig& cfg, const Weights& w, const std::string& variant);
contract::Description backbone_contract(const ModelConfig& cfg);

// The absolute position embedding the trunk adds after the patch embedding, [1, g, g, vit_dim]: the
// checkpoint's pos_embed without its CLS row, tiled (not interpolated) to the token grid.
Tensor vit_abs_pos_embed(const ModelConfig& cfg, const Weights& w);

}  // namespace segmux::sam31
