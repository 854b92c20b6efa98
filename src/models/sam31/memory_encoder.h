// The `memory_encoder` candidate: SAM 3.1's multiplex mask-memory encoder (_encode_new_memory with the
// SimpleMaskEncoder) for ONE bucket: mux-space mask logits -> sigmoid*2-1 (+ conditioning channels)
// -> [antialiased bilinear resize] -> mask downsampler -> + pix_feat_proj(pix_feat) -> ConvNeXt fuser
// -> + no_obj_embed_spatial for absent/empty slots -> memory features (fp32 and the bf16 copy that
// the memory bank keeps). Contract: docs/contracts/memory_encoder.md.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

// The candidate: mask logits at input_mask_size (the size the mask downsampler works at), so no resize.
ir::Graph build_memory_encoder(const ModelConfig& cfg, const Weights& w);
// Same graph for mask logits of another square size (e.g. image_size masks of add_prompt / new
// objects): the official F.interpolate(bilinear, antialias=True, align_corners=False) to
// input_mask_size is built in as a separable Gather/Mul/Add resize with PyTorch's weights.
ir::Graph build_memory_encoder_for_mask_size(const ModelConfig& cfg, const Weights& w, int mask_size);

// Variant "image_size_masks": build_memory_encoder_for_mask_size(cfg, w, cfg.image_size).
constexpr const char* kMemoryEncoderImageSizeVariant = "image_size_masks";
ir::Graph build_memory_encoder_variant(const ModelConfig& cfg, const Weights& w, const std::string& variant);

// The written contract (docs/contracts/memory_encoder.md).
contract::Description memory_encoder_contract(const ModelConfig& cfg);

// PyTorch's antialiased bilinear (align_corners=False) resize weights for one axis: for output i,
// taps[i] source indices and weights (normalized). Exposed for tests.
struct ResizeTaps {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<float>> weight;
};
ResizeTaps antialias_bilinear_taps(int64_t input_size, int64_t output_size);

}  // namespace segmux::sam31
