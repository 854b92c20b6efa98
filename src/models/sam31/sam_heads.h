// SAM building blocks shared by the SAM 3.1 tracker candidates (interactive_decoder,
// propagation_decoder, memory_encoder): the official sam/transformer.py, sam/prompt_encoder.py and
// sam/common.py pieces. Like layers.h, every graph function appends standard ONNX opset-17 nodes
// and returns the output value id; `prefix` is the full weight path of the module.
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "ir/builder.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

// Where the tracker's modules live in the SAM 3.1 checkpoint ("tracker.model.sam_mask_decoder...").
inline const std::string kTrackerPrefix = "tracker.model.";

// SAM's PositionEmbeddingRandom over a g x g grid, (1, 2F, g, g), from a (2, F) gaussian matrix,
// computed in fp32 as the official code does.
Tensor random_fourier_dense_pe(const Tensor& gaussian_matrix, int64_t grid);

// SAM's Attention (q/k/v projections to an internal dim, heads, out projection) on (1, L, D) values.
// key_bias (optional, >= 0): an additive (1, 1, 1, Lk) bias on the scores (-1e30 drops a padded key).
int sam_attention(ir::GraphBuilder& b, const Weights& w, const std::string& prefix, int q, int k, int v, int heads,
                  int key_bias = -1);

// SAM's TwoWayTransformer (sam/transformer.py): tokens (1, T, D) attend to image keys (1, L, D) with
// key positional encoding key_pe (1, L, D); returns the final queries (1, T, D) and keys (1, L, D).
// token_key_bias (optional): (1, 1, 1, T) additive bias wherever the tokens are the keys (self
// attention, image-to-token attention), so padded prompt tokens take no part in the result.
struct TwoWayResult {
  int queries;
  int keys;
};
TwoWayResult two_way_transformer(ir::GraphBuilder& b, const Weights& w, const std::string& prefix, int tokens, int keys,
                                 int key_pe, int depth, int heads, int token_key_bias = -1);

// ConvTranspose2d(kernel 2, stride 2) on channels-last tokens (1, h*w, Cin) -> NCHW (1, Cout, 2h, 2w),
// as a MatMul (the 2x2 outputs of one input pixel do not overlap).
int conv_transpose_2x2(ir::GraphBuilder& b, const Weights& w, const std::string& name, int tokens, int64_t h,
                       int64_t wd);

// LayerNorm2d (sam/common.py, model_misc.py) on NCHW, written out as the official module computes it:
// mean and biased variance over C, (x - u) / sqrt(var + eps), then the per-channel affine
// (prefix.weight, prefix.bias).
int layer_norm_2d(ir::GraphBuilder& b, const Weights& w, int x, const std::string& prefix, float eps = 1e-6f);

// The prompt encoder's dense embedding of a mask prompt (sam/prompt_encoder.py _embed_masks:
// mask_downscaling = Conv 2x2/2, LayerNorm2d, GELU, Conv 2x2/2, LayerNorm2d, GELU, Conv 1x1) on mask
// logits (1, 1, 4g, 4g) -> (1, D, g, g). `prompt_encoder` is the module's weight path. The LayerNorm2d is
// emitted as Transpose + LayerNormalization (the pattern the interactive decoder was validated with).
int prompt_mask_embedding(ir::GraphBuilder& b, const Weights& w, const std::string& prompt_encoder, int mask);

}  // namespace segmux::sam31
