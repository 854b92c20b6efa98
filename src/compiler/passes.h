// The compiler's graph passes (IR -> IR). Each returns true when it changed the graph; none changes
// what the graph computes (the precision pass changes only how optimized kernels compute).
// Graph outputs keep their names and values: a pass never leaves an output dangling or renamed.
#pragma once
#include <cstddef>
#include <string>

#include "compiler/pass.h"
#include "ir/graph.h"
#include "ir/precision.h"

namespace segmux::compiler {

struct FoldOptions {
  // A folded result may always be as large as the node's constant inputs (a pre-transposed weight);
  // beyond that (Expand, Tile, ConstantOfShape ...) it is folded only up to this many bytes.
  size_t max_growth_bytes = size_t(1) << 20;
};

// Runs every node whose inputs are all constants with the reference kernels; its outputs become
// initializers. Constant nodes become initializers. Random ops are never folded.
bool fold_constants(ir::Graph& g, const FoldOptions& opt = {});

// Shape and Size of values with static shapes become constants (chains then fold with
// fold_constants: Gather on a shape, Concat, Unsqueeze, ...).
bool fold_shape_ops(ir::Graph& g);

// Removes nodes whose outputs nobody uses and values/initializers nobody references.
bool eliminate_dead_code(ir::Graph& g);

// Removes Identity, inference-mode Dropout, Cast to the same dtype, Reshape/Flatten/Squeeze/Expand to
// the same shape and identity Transposes. When such a node produces a graph output, its input takes
// over the output (and its name) if that is legal; otherwise the node stays.
bool eliminate_noops(ir::Graph& g);

// Merges nodes with the same op, attributes and inputs, and identical initializers.
bool eliminate_common_subexpressions(ir::Graph& g);

// The attribute the optimized kernels honour for reduced-precision compute (ir/precision.h).
using ir::kPrecisionAttr;
// Marks MatMul/Gemm/Conv/ConvTranspose and segmux Linear nodes with a constant weight, and segmux
// Attention nodes on f32 q, k, v without a mask input, for bf16 compute. The reference kernels ignore the attribute
// (they stay the fp32 ground truth).
bool mark_bf16_precision(ir::Graph& g);
// After it (bf16 builds): drops Cast(Cast(x, bf16), f32) roundings feeding a bf16 MatMul / Gemm /
// Linear input the kernel rounds anyway (exact), and those between a bf16 Linear and its GELU (so they
// fuse; GELU then sees the unrounded f32 result). passes/bf16_rounding.cpp.
bool drop_bf16_roundings(ir::Graph& g);
// After those (bf16 builds): a bf16 Linear whose output only bf16 Linears read (as their input 0, which
// their kernels round to bf16) stores it as bf16 (ir::kLinearBf16Output): the same values, half the
// bytes, and no conversion in the reader (the ViT MLP's fc1 -> fc2). passes/bf16_rounding.cpp.
bool keep_bf16_between_linears(ir::Graph& g);
// Every build: Cast(Cast(x, bf16), f32) around a segmux Gelu folded into it (attributes
// ir::kGeluRoundInput / kGeluRoundOutput; exact). passes/bf16_rounding.cpp.
bool fold_gelu_bf16_roundings(ir::Graph& g);

// After the fusion passes, CPU builds: segmux Attention's q / k / v and Rope's x read through strided
// views of the tensors the Transposes / Splits / Reshapes before them select from, and an Attention
// followed by a Transpose writes permuted (ir/strided_view.h); those nodes go. passes/fuse_views.cpp.
bool read_through_views(ir::Graph& g);

// Small helpers shared by the passes (and tests).
void replace_uses(ir::Graph& g, int from, int to);                 // node inputs only
void remove_nodes(ir::Graph& g, const std::vector<char>& remove);  // keeps order; fixes producers

}  // namespace segmux::compiler
