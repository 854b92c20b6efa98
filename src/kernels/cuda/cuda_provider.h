// The CUDA provider: kernels behind the same boundary as the CPU ones (kernels/kernel.h), for the nodes
// of a compiled model. Its kernels run on device tensors (cuda_memory.h: raw() is device memory) and
// launch on cuda::current_stream(). A node it cannot run is never sent to the CPU: the CUDA executor
// fails at load, naming the node and cuda_unsupported_reason().
#pragma once
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace segmux::cuda {

// How Linear/MatMul nodes without the bf16 precision attribute multiply: exact fp32 FMAs or TF32
// tensor cores. Nodes the compiler marked bf16 (ir::wants_bf16) always use bf16 tensor cores.
enum class Fp32Gemm { exact, tf32 };

const Provider& cuda_provider(Fp32Gemm fp32_gemm = Fp32Gemm::exact);

// "" when the provider has a kernel for this node with these types, else why not (op not covered,
// dtype, rank, attribute), in plain words. Host-only: needs no device.
std::string cuda_unsupported_reason(const KernelInit& init);

// The ops with a CUDA kernel ("Add", "segmux.Linear", ...), sorted: the coverage list of docs/cuda.md.
std::vector<std::string> cuda_supported_ops();

}  // namespace segmux::cuda
