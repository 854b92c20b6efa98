// The list of built-in op schemas. Each group registers itself from its own file.
#include <mutex>

#include "ir/op_schema.h"
#include "ir/schemas/schemas.h"

namespace segmux::ir {

void register_builtin_schemas() {
  static std::once_flag once;
  // Registration functions must not call find_schema (it would re-enter this once_flag).
  std::call_once(once, [] {
    for (auto fn : schema_groups()) fn();
  });
}

}  // namespace segmux::ir
