// Op schemas: for every op type we support, how output types and shapes follow from the inputs.
// Kernels live elsewhere (src/kernels); this is what the builder, the verifier and the compiler know.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace segmux::ir {

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  bool has_shape = false;
};

struct InferContext {
  const Node& node;
  std::vector<const TensorType*> inputs;    // nullptr where an optional input is omitted
  std::vector<const Tensor*> input_values;  // known values (constants, or real data at run time); else nullptr
  std::vector<TensorType> outputs;          // filled by the schema, one per node output
  // Output shape dimensions that depend on data no one knows yet (NonZero) may be -1.

  const TensorType& in(size_t i) const;  // throws a clear error when input i is missing
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor* value(size_t i) const { return i < input_values.size() ? input_values[i] : nullptr; }
  [[noreturn]] void error(const std::string& what) const;  // "node 'x' (Op): what"
};

using InferFn = std::function<void(InferContext&)>;

struct OpSchema {
  std::string op_type;
  std::string domain;  // "" for ONNX, "segmux" for our fused ops
  int min_inputs = 0, max_inputs = 0;
  int min_outputs = 1, max_outputs = 1;
  InferFn infer;
};

void register_schema(OpSchema schema);
const OpSchema* find_schema(std::string_view domain, std::string_view op_type);
std::vector<const OpSchema*> all_schemas();
// Registers every built-in schema once (idempotent, thread-safe).
void register_builtin_schemas();

// Runs the node's schema; checks arity. Throws with the node and op named on failure.
std::vector<TensorType> infer_node(const Node& node, const std::vector<const TensorType*>& inputs,
                                   const std::vector<const Tensor*>& input_values);

// Shape inference over the whole graph: fills dtype/shape of every value from the inputs' declared
// shapes; constants propagate through shape arithmetic. Throws on the first inconsistency.
void infer_shapes(Graph& g);

// Full verification: structure, then shape inference, then every graph output has a known shape.
void verify(Graph& g);

}  // namespace segmux::ir
