// Schema groups (one per file in this folder). Add a group here and to schema_groups().
#pragma once
#include <vector>

namespace segmux::ir {

using SchemaGroupFn = void (*)();
std::vector<SchemaGroupFn> schema_groups();

}  // namespace segmux::ir
