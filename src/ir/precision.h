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

}  // namespace segmux::ir
