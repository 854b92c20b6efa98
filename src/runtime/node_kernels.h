// Kernel creation for the nodes of a graph, shared by the Interpreter and the Executor
// (compiled models): the provider order and the KernelInit a node's kernel is made from.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace segmux {

// Optimized CPU kernels first (when allowed), the reference kernels as the fallback for everything.
std::vector<const Provider*> kernel_providers(bool use_optimized_kernels);

// Creates the kernel of one node from the graph's value types and constants; `chosen` receives the
// provider's name.
std::unique_ptr<Kernel> create_node_kernel(const ir::Graph& g, const ir::Node& node,
                                           const std::vector<const Provider*>& providers, int num_threads,
                                           std::string* chosen);

}  // namespace segmux
