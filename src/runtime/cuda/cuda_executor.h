// CudaExecutor: runs a compiled model (the same final graph and static memory plan as the CPU Executor)
// on one NVIDIA GPU through the CUDA provider (kernels/cuda/cuda_provider.h).
//  - At load: every non-view node must have a CUDA kernel, else one error lists each node and why (no
//    silent CPU fallback); then the device is required ("CUDA backend: no CUDA device ..." otherwise).
//  - One device arena per model, sized and laid out by the memory plan (the same offsets as the CPU
//    arena); the weights uploaded once into one device block; one stream per executor.
//  - run(): inputs copied to the device, every kernel launched in graph order on the stream, the wanted
//    outputs copied back (one synchronisation per run). Intermediates never leave the device.
// Graph capture (one CUDA graph per candidate, replayed per run) is the next step: run_nodes() is the
// whole launch sequence, the part a capture would record.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_provider.h"
#include "runtime/executor.h"

namespace segmux {

struct CudaExecutorOptions {
  cuda::Fp32Gemm fp32_gemm = cuda::Fp32Gemm::exact;  // tf32: TF32 tensor cores for the fp32 GEMMs
};

// Where the executor puts things in device memory: the arena (the plan's bytes, rounded up) and one
// weights block with each initializer at a 256-byte aligned offset. Host-only arithmetic.
struct CudaMemoryLayout {
  size_t arena_bytes = 0;
  size_t weight_bytes = 0;
  size_t input_bytes = 0;
  std::map<int, size_t> weight_offsets;  // value id -> offset in the weights block
  std::map<int, size_t> input_offsets;   // graph input value id -> offset in the inputs block
};
CudaMemoryLayout cuda_memory_layout(const ir::Graph& g, const MemoryPlan& plan);

// The nodes the CUDA backend cannot run, one line each ("node 'name' (Op): why"); empty when every
// node has a kernel. Host-only: the check the executor makes before touching the device.
std::vector<std::string> cuda_unsupported_nodes(const ir::Graph& g, const MemoryPlan& plan,
                                                cuda::Fp32Gemm fp32_gemm = cuda::Fp32Gemm::exact);

class CudaExecutor {
 public:
  CudaExecutor(ir::Graph graph, MemoryPlan plan, CudaExecutorOptions options = {});
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // As Executor::run: inputs by name (declared dtype and shape), outputs copied out to host tensors.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs,
                                    const std::vector<std::string>& wanted);

  const ir::Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }
  const CudaMemoryLayout& layout() const { return layout_; }

 private:
  struct Device;  // stream and buffers
  void make_kernels();
  void copy_inputs(const std::map<std::string, Tensor>& inputs);
  void run_nodes();

  ir::Graph graph_;
  MemoryPlan plan_;
  CudaExecutorOptions options_;
  CudaMemoryLayout layout_;
  std::unique_ptr<Device> device_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<Tensor> values_;  // per value id: its device tensor (arena view, weight or input slot)
  std::mutex run_mutex_;
};

}  // namespace segmux
