// Shared by the .cu files: CUDA errors -> Status, launch shapes, index arithmetic.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/launch_shape.h"

namespace segmux::cuda::detail {

// The message of the last failure on this thread (Status points into it).
Status fail_status(const char* what, const char* detail);
inline Status status_of(cudaError_t e, const char* what) {
  return e == cudaSuccess ? nullptr : fail_status(what, cudaGetErrorString(e));
}
// After a kernel launch: the launch error, if any (asynchronous faults surface at the next sync).
inline Status launched(const char* what) { return status_of(cudaGetLastError(), what); }
inline cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }

// Grid-stride loop bounds for n elements.
inline dim3 grid_for(int64_t n) { return dim3(unsigned(elementwise_blocks(n))); }
inline dim3 block_for() { return dim3(unsigned(kElementwiseThreads)); }

}  // namespace segmux::cuda::detail
