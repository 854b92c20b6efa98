// Candidate `point_decoder`: the SAM 3.1 tracker's interactive head with point / box prompts for ONE
// object on one frame (official add_new_points -> _forward_sam_heads, interactive branch:
// interactive_sam_prompt_encoder + interactive_sam_mask_decoder + interactive_obj_ptr_proj).
//   sparse = PE(points + 0.5) + point_embeddings[label] (label -1: not_a_point_embed); boxes come as
//            two points labelled 2 / 3, and the prompt always ends with SAM's pad point (label -1)
//   dense  = no_mask_embed (no mask prompt)
//   pix    = interactive level-2 features + interactivity_no_mem_embed
//   tokens = [obj_score, iou, mask tokens (1 + multimask), sparse] -> TwoWayTransformer
//   masks  = hypernetwork MLPs x upscaled embedding (with the interactive conv_s0 / conv_s1 skips)
// Selection (official MaskDecoder + _forward_sam_heads): multimask -> argmax IoU over the multimask
// tokens; single -> token 0, or the best multimask mask when token 0's stability score is below
// multimask_stability_thresh (dynamic_multimask_via_stability). Masks are gated to -1024 when the
// object-score logit is <= 0; the object pointer is interactive_obj_ptr_proj(token) mixed with
// no_obj_ptr_linear when absent.
//
// Fixed shapes: the prompt has max_prompt_points + 1 slots; `point_valid` = 0 marks unused slots,
// whose tokens get -1e30 on their attention keys (exactly zero weight: the result equals the official
// computation on the unpadded prompt).
#pragma once
#include <string>

#include "core/tensor.h"
#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

// Build variant taking the decoder's own inputs (pix with no_mem_embed, high-res features after
// conv_s0/conv_s1) instead of the backbone's interactive levels: what the official fixtures record.
inline const std::string kPointDecoderFeaturesVariant = "features";

// Prompt slots of the graph: max_prompt_points clicks / box corners + SAM's pad point.
int point_decoder_slots(const ModelConfig& cfg);

ir::Graph build_point_decoder(const ModelConfig& cfg, const Weights& w);
ir::Graph build_point_decoder_variant(const ModelConfig& cfg, const Weights& w, const std::string& variant);
contract::Description point_decoder_contract(const ModelConfig& cfg);

// One object's prompt on one frame, in model-input pixels (official: relative coords * image_size).
struct PointPrompt {
  std::vector<float> xy;        // x0, y0, x1, y1, ...
  std::vector<int64_t> labels;  // 1 positive, 0 negative, 2 / 3 box top-left / bottom-right
};

// The official multimask decision (_use_multimask): multimask_min_pt_num <= points <= multimask_max_pt_num.
bool point_prompt_multimask(const ModelConfig& cfg, const PointPrompt& p);

// The graph's prompt inputs for `p` (point_coords, point_labels, point_valid, multimask); error naming
// the limit when p has more than max_prompt_points points.
struct PointDecoderPromptInputs {
  Tensor coords, labels, valid, multimask;
};
PointDecoderPromptInputs point_decoder_prompt_inputs(const ModelConfig& cfg, const PointPrompt& p);

}  // namespace segmux::sam31
