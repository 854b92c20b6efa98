// Mask arithmetic of the SAM 3.1 control plane (facts from the official sam3 code, commit 9f22cb9):
// bilinear resizing with PyTorch's align_corners=False convention, pairwise IoU / IoM of binarised
// masks, greedy mask NMS, boundary suppression of boxes, boxes from masks, the pixel-wise and
// object-wise non-overlap rules and small-hole filling.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "pipeline/masks/rle.h"

namespace segmux::pipeline {

// N float masks (mask logits), row-major [N, H, W].
struct MaskStack {
  int count = 0;
  int height = 0;
  int width = 0;
  std::vector<float> values;
  MaskStack() = default;
  MaskStack(int n, int h, int w) : count(n), height(h), width(w), values(size_t(n) * size_t(h) * size_t(w), 0.f) {}
  size_t plane() const { return size_t(height) * size_t(width); }
  float* mask(int i) { return values.data() + size_t(i) * plane(); }
  const float* mask(int i) const { return values.data() + size_t(i) * plane(); }
  // Rows `rows` of this stack, in that order.
  MaskStack select(const std::vector<int>& rows) const;
  void append(const MaskStack& other);  // sizes must match (an empty stack adopts them)
  // From / to a tensor [N, H, W] (f32; f16/bf16 are converted).
  static MaskStack from_tensor(const Tensor& t, const char* what);
  Tensor to_tensor() const;
};

// PyTorch F.interpolate(mode="bilinear", align_corners=False, antialias=False) of one plane.
void resize_bilinear(const float* src, int src_h, int src_w, float* dst, int dst_h, int dst_w);
MaskStack resize_bilinear(const MaskStack& masks, int dst_h, int dst_w);

// Pairwise overlap of binarised masks (> 0). IoU = |a & b| / max(|a | b|, 1) (perflib mask_iou);
// IoM = |a & b| / (min(|a|, |b|) + 1e-8) (mask_iom). `a_valid` (optional) zeroes rows of a.
enum class Overlap { IoU, IoM };
std::vector<float> pairwise_overlap(const MaskStack& a, const MaskStack& b, Overlap kind,
                                    const std::vector<bool>* a_valid = nullptr);
// Same for a stack with itself, IoU with union + 1e-8 as the batched NMS computes it. iom_over_row_area:
// IoM[i][j] = |i & j| / |i| (the single-frame NMS's perflib pairwise_iom, see NmsVariant).
std::vector<float> self_overlap_for_nms(const MaskStack& masks, Overlap kind, bool iom_over_row_area = false);

// The two NMS the official video predictor runs (perflib on, its default):
// - batched: frames detected in batches while propagating (_batched_generic_nms_mask): greedy, each
//   KEPT candidate suppresses the later ones whose overlap with it is > the threshold.
// - single_frame: the add_prompt frame (batched grounding is switched off there): perflib's
//   generic_nms_mask lets EVERY higher-scored candidate suppress, kept or not, and its pairwise_iom
//   divides the intersection by the suppressing candidate's own area (torch.min of two column vectors,
//   not the pairwise minimum). IoU is the same in both.
enum class NmsVariant { batched, single_frame };

// Mask NMS: candidates are probs > prob_threshold, visited by descending prob (see NmsVariant).
std::vector<bool> nms_masks(const std::vector<float>& probs, const MaskStack& masks, float prob_threshold,
                            float overlap_threshold, Overlap kind, NmsVariant variant = NmsVariant::batched);

// Keeps boxes (normalised xyxy) whose centre lies strictly inside [margin, 1 - margin] on both axes.
std::vector<bool> boxes_away_from_boundary(const std::vector<std::array<float, 4>>& boxes_xyxy, float margin);

// The permutation the control plane applies to detections: torch's (unstable) descending argsort of the
// keep flags, which on CPU is libstdc++ std::sort over (value, index) pairs compared by value only.
std::vector<int> keep_first_order(const std::vector<bool>& keep);

// Pixel-index box (x_min, y_min, x_max, y_max) of a mask (torchvision masks_to_boxes); zeros if empty.
std::array<float, 4> mask_to_box_xyxy(const BinaryMask& mask);

// Binarise (> 0).
BinaryMask binarize(const float* logits, int h, int w);

// Official _suppress_object_pw_area_shrinkage (before memory encoding): each pixel keeps only the
// argmax object's score (others clamped to <= -10); an object whose foreground area after that step
// is < 30 % of its area before is clamped to <= -10 everywhere. Returns the masks with only the
// second rule applied (the official function returns the original scores of kept objects).
MaskStack suppress_area_shrinkage(const MaskStack& masks);

// Official object-wise non-overlap of the outputs (_apply_object_wise_non_overlapping_constraints with
// background 0 on binary masks): a pixel stays with object i only if i is the first object with the
// highest score among the objects covering it, and that score is > 0.
void object_wise_non_overlap(std::vector<BinaryMask>& masks, const std::vector<float>& scores);

// Official fill_holes_in_mask_scores: background components (8-connected) of area <= max_area become
// 0.1; then foreground components of area <= min(max_area, area/2) become -0.1. No-op if max_area <= 0.
void fill_holes_in_mask_scores(MaskStack& masks, int max_area);

// The SAM-1-style image predictor's post-processing (official SAM2Transforms.postprocess_masks) per
// mask: background components (logit <= threshold, 8-connected) of area <= max_hole_area become
// threshold + 10; foreground components (> threshold) of area <= max_sprinkle_area become threshold - 10.
// Both are found on the masks as given (the official labels the input, not the hole-filled masks).
void fill_small_regions(MaskStack& masks, float threshold, int max_hole_area, int max_sprinkle_area);

// Numerically the same sigmoid as torch's float sigmoid for the ranges the control plane meets.
inline float sigmoidf(float x) { return 1.f / (1.f + std::exp(-x)); }

}  // namespace segmux::pipeline
