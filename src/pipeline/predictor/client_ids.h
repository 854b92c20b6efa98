// The object ids a client may give (requests, the session API, C, Python, serve): 0 .. 2^31 - 1.
// Ids segmux assigns count on from the largest one in use, so a client id near 2^63 made the next ones
// wrap to negative values (and every later propagation fail until a reset); below 2^31 they stay exact
// in every client too (JavaScript numbers, 32-bit ints).
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"

namespace segmux::pipeline {

constexpr int64_t kMaxClientObjId = (int64_t(1) << 31) - 1;

// Throws naming `what` (the request) when obj_id is outside 0..kMaxClientObjId.
inline void check_client_obj_id(int64_t obj_id, const std::string& what) {
  SEGMUX_CHECK(obj_id >= 0 && obj_id <= kMaxClientObjId, what, ": obj_id ", obj_id, " is outside 0..", kMaxClientObjId,
               " (the ids segmux gives new objects count on from the largest one)");
}

}  // namespace segmux::pipeline
