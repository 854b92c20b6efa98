// The .smx verifier: what the reader checks before and after it trusts a file's bytes. The header
// (magic, format version, header and table checksums, file size), the section table (kinds, bounds,
// zero padding, section checksums, hashed in chunks released from the resident set), and, once the
// graph is parsed, that its recorded shapes are the ones shape inference derives. Every problem is a
// segmux::Error naming the file (`what`). Internal to src/runtime/.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/offline_format.h"
#include "runtime/offline_model.h"

namespace segmux::offline_format {

struct Layout {
  uint32_t format_version = 0;
  std::string producer;
  std::vector<SectionEntry> sections;  // in file order: meta, graph, plan, weights[, prepacked]
};

// Checks the header and the section table of `size` bytes at `base` (section checksums as `opt` says).
Layout verify_layout(const std::byte* base, size_t size, const std::string& what, const LoadOptions& opt);

// The shapes and dtypes a file records for its values are what inference derives from its graph (the
// memory plan was sized from them). Fills in the graph's producers and inferred shapes.
void verify_recorded_shapes(ir::Graph& g, const std::string& what);

}  // namespace segmux::offline_format
