// A candidate's written contract (docs/contracts/<name>.md, contracts/<name>.md of a package): its inputs
// and outputs with shapes, dtypes, meaning, producer and consumer, rendered as markdown. Names, order,
// shapes and dtypes are read from the built graph; only what the graph cannot say (what a tensor means,
// who makes or reads it, notes) is written by hand, keyed by the tensor_names.h constants.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace segmux::sam31::contract {

// What one graph input (output) means and who produces (consumes) it.
struct Port {
  std::string meaning, who;
};

struct Description {
  std::string summary;
  std::map<std::string, Port> inputs, outputs;  // keyed by tensor name
  std::vector<std::string> notes;
};

// The contract of candidate `name` for graph `g`: one row per graph input and output, in graph order. A
// graph port without a description, or a description of a port the graph does not have, is an error
// naming it (the written contract cannot drift from the graph).
std::string markdown(const std::string& name, const Description& d, const ir::Graph& g);

}  // namespace segmux::sam31::contract
