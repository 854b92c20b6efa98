// The subgraph of a model between named tensors (what onnx.utils.extract_model does): the nodes the
// given outputs need, stopping at the given inputs. Initializers the subgraph uses are copied into it
// (also those shared with nodes outside the cut); the new graph inputs take their types and shapes from
// the model's shape inference.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace segmux::onnx_io {

// Errors (segmux::Error, in plain words): an unknown name (with the nearest names, or the available
// ones), a name given twice, no outputs, or an output that needs a tensor that is neither among
// `inputs` nor an initializer/constant (a model input left out of the cut).
ir::Graph extract_subgraph(const ir::Graph& g, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs);

// Up to `max` value names of `g` nearest to `name` (edit distance, case-insensitive substrings first).
std::vector<std::string> nearest_value_names(const ir::Graph& g, const std::string& name, size_t max = 5);

}  // namespace segmux::onnx_io
