// Internal to the CUDA provider: the op table and the shape helpers its kernels share.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/cuda_provider.h"

namespace segmux::cuda::ops {

struct OpEntry {
  // "" when supported (inputs/outputs are already known to have static shapes of rank <= kMaxRank).
  std::function<std::string(const KernelInit&)> check;
  std::function<std::unique_ptr<Kernel>(const KernelInit&, Fp32Gemm)> make;
};
using OpTable = std::map<std::string, OpEntry>;  // key: op_type, or "segmux.<op_type>"

void add_elementwise_ops(OpTable& table);
void add_movement_ops(OpTable& table);
void add_norm_ops(OpTable& table);
void add_linalg_ops(OpTable& table);
void add_index_ops(OpTable& table);
void add_conv_ops(OpTable& table);

// A kernel from a function of the context and the current stream.
using LaunchFn = std::function<void(KernelContext&, Stream)>;
std::unique_ptr<Kernel> launch_kernel(LaunchFn fn, std::string name);

// Input k's type (nullptr where omitted) and its constant value (nullptr when not a constant).
inline const ir::TensorType* in_type(const KernelInit& init, size_t k) {
  return k < init.inputs.size() ? init.inputs[k] : nullptr;
}
inline const Tensor* in_const(const KernelInit& init, size_t k) {
  return k < init.constants.size() ? init.constants[k] : nullptr;
}
// Broadcast addressing of `ins` onto `out` (numpy rules; each rank <= out's).
Broadcast make_broadcast(const Shape& out, const std::vector<Shape>& ins);
bool scalar_kind_of(DType t, ScalarKind* kind);
// Integers of a constant i64/i32 tensor (host).
std::vector<int64_t> const_ints(const Tensor& t);
// Every input present is of dtype `t` (or the listed input indices only when given).
bool inputs_are(const KernelInit& init, DType t);
std::string dtype_reason(const KernelInit& init, const char* wanted);
int64_t normalized_axis(int64_t axis, size_t rank);

}  // namespace segmux::cuda::ops
