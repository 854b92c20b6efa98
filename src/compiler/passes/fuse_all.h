// Fusion passes: standard ONNX patterns (as src/models/sam31/layers.h emits them, and as torch.onnx
// exports them) become segmux fused ops that the optimized CPU kernels run in one go.
// Each pass rewrites the pattern's last node in place (keeping its output value, so graph outputs
// and later consumers are untouched) and removes the pattern's inner nodes, which must have no other
// consumers. Semantics of the fused ops: src/ir/schemas/segmux_ops.cpp.
#pragma once
#include <vector>

#include "compiler/pass.h"

namespace segmux::compiler {

// x * 0.5 * (1 + Erf(x / sqrt 2)) in any of its usual operand orders (Div by sqrt 2 or Mul by
// 1/sqrt 2) -> segmux Gelu(x).
bool fuse_gelu(ir::Graph& g);

// MatMul(q, Transpose(k, last two dims swapped)) -> [Mul|Div by a scalar constant] -> [Add(mask)] ->
// Softmax(last axis) -> MatMul(., v) -> segmux Attention(q, k, v[, mask], scale).
bool fuse_attention(ir::Graph& g);

// Reshape(x, [N, G, -1]) -> InstanceNormalization(scale 1, bias 0) -> Reshape(x's shape)
// [-> Mul(gamma per channel) -> Add(beta per channel)] -> segmux GroupNorm(x, gamma, beta).
bool fuse_group_norm(ir::Graph& g);

// ReduceMean(x, channel axis) -> Sub -> square -> ReduceMean -> Add(eps) -> Sqrt -> Div -> Mul(gamma per
// channel) -> Add(beta per channel) (LayerNorm2d) -> Transpose(channels last) -> LayerNormalization(last
// axis) -> Transpose back; then merge_transposes.
bool fuse_layer_norm_2d(ir::Graph& g);

// Transpose(Transpose(x, p1), p2), the inner one consumed only there -> Transpose(x, composed), or x
// itself when the composition is the identity (unless the result is a graph output).
bool merge_transposes(ir::Graph& g);

// Conv -> Transpose(to channels-last), Transpose(to channels-first) [-> Gelu|Relu] -> Conv: the conv
// becomes a segmux Conv reading / writing [N, H, W, C] and the Transpose goes.
bool conv_channels_last(ir::Graph& g);

// MatMul(x, W constant 2-D) -> Add(bias constant [N]) -> segmux Linear(x, W, bias); then a Linear
// followed by segmux Gelu or Relu gets activation="gelu" / "relu", and a Linear followed by Add(residual of the
// output's shape) takes the residual as its 4th input (oneDNN post-ops).
bool fuse_linear(ir::Graph& g);

// Reshape(x, [..., L, D/2, 2]) -> Split -> (a cos - b sin, a sin + b cos) -> Concat -> Reshape back
// (interleaved-pair RoPE with constant [L, D/2, 1] tables) -> segmux Rope(x, cos, sin).
bool fuse_rope(ir::Graph& g);

// Chains of f32 element-wise ops (Add, Sub, Mul, Div with an operand that broadcasts to the running
// value, Sigmoid, Relu), two or more, each value consumed only by the next -> segmux Pointwise.
bool fuse_pointwise(ir::Graph& g);

// All of the above in the order they must run (GELU before Linear so fc1 + GELU fuse; Pointwise last,
// so it takes only what no other pattern claimed).
std::vector<Pass> fusion_passes();

}  // namespace segmux::compiler
