// The node attribute that asks the optimized kernels for reduced-precision compute: written by the
// compiler's precision pass, read by the CPU kernels. Absent = fp32 (the reference kernels always
// compute in the graph's own dtypes and ignore it).
#pragma once
#include "ir/graph.h"

namespace segmux::ir {

inline constexpr const char* kPrecisionAttr = "segmux_precision";
inline constexpr const char* kPrecisionFp32 = "fp32";
inline constexpr const char* kPrecisionBf16 = "bf16";

inline bool wants_bf16(const Node& node) { return node.attr_string(kPrecisionAttr, kPrecisionFp32) == kPrecisionBf16; }

// Semantic attributes of segmux Gelu (honoured by every kernel, the reference included): 1 = the input,
// resp. the output, is rounded to bf16 values (round to nearest even, as Cast to bf16 and back does).
inline constexpr const char* kGeluRoundInput = "bf16_round_input";
inline constexpr const char* kGeluRoundOutput = "bf16_round_output";

// Semantic attribute of segmux Linear: 1 = the output is stored as bf16 (rounded to nearest even) instead
// of the weight's dtype. The bf16 build sets it where every reader rounds that value to bf16 anyway
// (compiler pass bf16-between-linears), so the result is the same and half the bytes move.
inline constexpr const char* kLinearBf16Output = "bf16_output";

}  // namespace segmux::ir
