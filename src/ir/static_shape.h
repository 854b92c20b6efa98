// Whether a value's shape is fully known (inferred, no symbolic or unknown dimension): what the
// compiler's folding, the memory planner and the executor require of a value they size.
#pragma once
#include "ir/graph.h"

namespace segmux::ir {

inline bool has_static_shape(const Value& v) {
  if (!v.has_shape) return false;
  for (int64_t d : v.shape)
    if (d < 0) return false;
  return true;
}

}  // namespace segmux::ir
