// The kernel boundary (our "execution provider" boundary): a provider is asked, per node, for a
// Kernel object; the reference provider handles every op, optimized providers handle what they can.
// Kernels are created once per model load (weights may be prepacked then) and run many times.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/op_schema.h"

namespace segmux {

struct KernelInit {
  const ir::Node& node;
  std::vector<const ir::TensorType*> inputs;  // nullptr where omitted
  std::vector<const Tensor*> constants;       // constant input data (weights), else nullptr
  std::vector<ir::TensorType> outputs;        // inferred output types
  int num_threads = 1;
};

struct KernelContext {
  const ir::Node& node;
  std::vector<const Tensor*> inputs;  // nullptr where omitted
  // Preallocated outputs of the inferred dtype/shape. An output whose inferred shape has a -1
  // (data-dependent, e.g. NonZero) is undefined on entry and the kernel assigns it.
  std::vector<Tensor*> outputs;
  int num_threads = 1;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelContext& ctx) = 0;
  // Bytes of prepacked weight data this kernel holds (for reports); 0 if none.
  virtual size_t prepacked_bytes() const { return 0; }
};

// A stateless kernel from a plain function.
using KernelFn = std::function<void(KernelContext&)>;
std::unique_ptr<Kernel> make_function_kernel(KernelFn fn);

struct Provider {
  std::string name;
  // Returns nullptr when this provider does not handle the node with these types.
  std::function<std::unique_ptr<Kernel>(const KernelInit&)> make;
};

// Reference kernels: one portable, plain implementation per op (the ground truth for tests).
void register_reference_kernel(const std::string& domain, const std::string& op_type,
                               std::function<std::unique_ptr<Kernel>(const KernelInit&)> factory);
void register_reference_kernel_fn(const std::string& domain, const std::string& op_type, KernelFn fn);
const Provider& reference_provider();
// Optimized CPU kernels (oneDNN + our vectorised loops at the level kernels/isa.h picks); nullptr for
// unhandled nodes.
const Provider& cpu_provider();

// The ops each provider has a kernel for ("Add", "segmux.Linear", ...), sorted; the CUDA provider's
// list is cuda::cuda_supported_ops(). Every op with a kernel has a schema and a reference kernel, and
// every schema a reference kernel (tests/kernels_reference/test_op_registration.cpp).
std::vector<std::string> reference_kernel_ops();
std::vector<std::string> cpu_kernel_ops();
// A provider table's key ("::Add", "segmux::Linear") as such a name ("Add", "segmux.Linear").
std::string op_name_of_key(const std::string& table_key);

// Picks the first provider that handles the node. Throws naming the node if none does.
std::unique_ptr<Kernel> create_kernel(const std::vector<const Provider*>& providers, const KernelInit& init,
                                      std::string* chosen_provider = nullptr);

}  // namespace segmux
