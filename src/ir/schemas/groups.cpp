#include "ir/schemas/schemas.h"

namespace segmux::ir {

std::vector<SchemaGroupFn> schema_groups() { return {}; }

}  // namespace segmux::ir
