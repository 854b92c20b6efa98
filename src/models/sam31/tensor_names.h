// The input and output names of every SAM 3.1 candidate graph: the one place each name is spelled.
// Builders, the compiled backend, the tracker glue, export and verification all use these constants.
#pragma once
#include <string>

namespace segmux::sam31::names {

namespace text_encoder {
inline constexpr const char* kTokenIds = "token_ids";
inline constexpr const char* kLanguageFeatures = "language_features";
inline constexpr const char* kLanguageMask = "language_mask";
inline constexpr const char* kLanguageEmbeds = "language_embeds";
}  // namespace text_encoder

namespace backbone {
inline constexpr const char* kImage = "image";
inline constexpr const char* kVitTrunk = "vit_trunk";
// The TriHead neck's three heads, in output order.
inline constexpr const char* kHeads[3] = {"det", "interactive", "propagation"};
enum Head { kDetHead = 0, kInteractiveHead = 1, kPropagationHead = 2 };
inline constexpr int kLevels = 3;
inline std::string fpn(Head head, int level) { return std::string(kHeads[head]) + "_fpn" + std::to_string(level); }
inline std::string pos(int level) { return "pos" + std::to_string(level); }
inline constexpr const char* kHighResS0 = "propagation_high_res_s0";
inline constexpr const char* kHighResS1 = "propagation_high_res_s1";
// The same convolutions on the levels rounded to bf16: the official interactive tracker reads the
// session's cached features, kept in bf16 (propagation after point prompts).
inline constexpr const char* kHighResS0Cached = "propagation_high_res_s0_bf16_fpn";
inline constexpr const char* kHighResS1Cached = "propagation_high_res_s1_bf16_fpn";
}  // namespace backbone

namespace detector {
inline std::string fpn(int level) { return "fpn" + std::to_string(level); }
inline constexpr const char* kPos2 = "pos2";
inline constexpr const char* kLanguageFeatures = "language_features";
inline constexpr const char* kLanguageMask = "language_mask";
inline constexpr const char* kTextIds = "text_ids";
inline constexpr const char* kBoxes = "boxes";             // box exemplars, normalised cxcywh
inline constexpr const char* kBoxLabels = "box_labels";    // 1 positive, 0 negative
inline constexpr const char* kBoxPadding = "box_padding";  // True = no box in this slot
inline constexpr const char* kPredLogits = "pred_logits";
inline constexpr const char* kPredBoxes = "pred_boxes";
inline constexpr const char* kPredBoxesXyxy = "pred_boxes_xyxy";
inline constexpr const char* kPredMasks = "pred_masks";
inline constexpr const char* kPresenceLogit = "presence_logit_dec";
inline constexpr const char* kQueries = "queries";
inline constexpr const char* kSemanticSeg = "semantic_seg";
}  // namespace detector

namespace interactive_decoder {
inline constexpr const char* kImage = "image";
inline constexpr const char* kMask = "mask";
inline constexpr const char* kObjPtr = "obj_ptr";
inline constexpr const char* kObjectScoreLogit = "object_score_logit";
inline constexpr const char* kSamObjectScoreLogit = "sam_object_score_logit";
}  // namespace interactive_decoder

namespace point_decoder {
inline constexpr const char* kImage = "image";
inline constexpr const char* kFpn0 = "fpn0";
inline constexpr const char* kFpn1 = "fpn1";
inline constexpr const char* kImageEmbeddings = "image_embeddings";  // variant "features"
inline constexpr const char* kHighResS0 = "high_res_s0";             // variant "features"
inline constexpr const char* kHighResS1 = "high_res_s1";             // variant "features"
inline constexpr const char* kPointCoords = "point_coords";
inline constexpr const char* kPointLabels = "point_labels";
inline constexpr const char* kPointValid = "point_valid";
inline constexpr const char* kMultimask = "multimask";
inline constexpr const char* kMaskInput = "mask_input";             // variant "mask_input"
inline constexpr const char* kMaskInputValid = "mask_input_valid";  // variant "mask_input"
inline constexpr const char* kMasks = "masks";
inline constexpr const char* kIouPred = "iou_pred";
inline constexpr const char* kObjectScoreLogit = "object_score_logit";
inline constexpr const char* kBestMaskIndex = "best_mask_index";
inline constexpr const char* kMask = "mask";
inline constexpr const char* kIou = "iou";
inline constexpr const char* kLowResMask = "low_res_mask";
inline constexpr const char* kObjPtr = "obj_ptr";
}  // namespace point_decoder

namespace propagation_decoder {
inline constexpr const char* kImage = "image";
inline constexpr const char* kImagePos = "image_pos";
inline constexpr const char* kHighResS0 = "high_res_s0";
inline constexpr const char* kHighResS1 = "high_res_s1";
inline constexpr const char* kMemoryMaskmem = "memory_maskmem";
inline constexpr const char* kMemoryImage = "memory_image";
inline constexpr const char* kMemoryTposIndex = "memory_tpos_index";
inline constexpr const char* kMemoryValid = "memory_valid";
inline constexpr const char* kObjPtrs = "obj_ptrs";
inline constexpr const char* kObjPtrTpos = "obj_ptr_tpos";
inline constexpr const char* kObjPtrValid = "obj_ptr_valid";
inline constexpr const char* kSlotValid = "slot_valid";
inline constexpr const char* kPixFeatWithMem = "pix_feat_with_mem";
inline constexpr const char* kMasks = "masks";
inline constexpr const char* kIouPred = "iou_pred";
inline constexpr const char* kObjectScoreLogits = "object_score_logits";
inline constexpr const char* kSamTokens = "sam_tokens";
inline constexpr const char* kObjPtr = "obj_ptr";
inline constexpr const char* kBestMaskIndex = "best_mask_index";
}  // namespace propagation_decoder

namespace memory_encoder {
inline constexpr const char* kPixFeat = "pix_feat";
inline constexpr const char* kMaskLogits = "mask_logits";
inline constexpr const char* kSlotValid = "slot_valid";
inline constexpr const char* kSlotConditioning = "slot_conditioning";
inline constexpr const char* kSlotObjectScore = "slot_object_score";
inline constexpr const char* kMaskmemFeatures = "maskmem_features";
inline constexpr const char* kMaskmemFeaturesBf16 = "maskmem_features_bf16";
}  // namespace memory_encoder

}  // namespace segmux::sam31::names
