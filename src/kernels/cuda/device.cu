// Device, memory and stream calls of the CUDA backend; the Status messages of every .cu file.
#include <cublasLt.h>
#include <cudnn_version.h>

#include <cstring>
#include <string>

#include "kernels/cuda/cuda_common.cuh"

namespace segmux::cuda {

namespace detail {

Status fail_status(const char* what, const char* detail) {
  thread_local std::string message;
  message = std::string(what) + ": " + (detail ? detail : "unknown CUDA error");
  return message.c_str();
}

}  // namespace detail

using detail::as_stream;
using detail::status_of;

bool backend_compiled() { return true; }

Status device_count(int* count) {
  *count = 0;
  const cudaError_t e = cudaGetDeviceCount(count);
  // No driver or no device is not a failure of this call: the caller says "no CUDA device".
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // clear the sticky error
    *count = 0;
    return nullptr;
  }
  return status_of(e, "cudaGetDeviceCount");
}

Status device_describe(int device, char* text, size_t text_bytes) {
  cudaDeviceProp p{};
  if (Status st = status_of(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties")) return st;
  std::snprintf(text, text_bytes, "%s, sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB, %zu KiB shared memory per block", p.name,
                p.major, p.minor, p.multiProcessorCount, double(p.totalGlobalMem) / (1 << 30), p.l2CacheSize >> 20,
                p.sharedMemPerBlockOptin >> 10);
  return nullptr;
}

Status device_versions(char* text, size_t text_bytes) {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  // cuDNN: the version compiled against (it is not linked yet, docs/cuda.md).
  std::snprintf(text, text_bytes, "CUDA runtime %d, driver %d, cuBLASLt %zu, cuDNN headers %d.%d.%d", runtime, driver,
                cublasLtGetVersion(), CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
  return nullptr;
}

Status set_device(int device) { return status_of(cudaSetDevice(device), "cudaSetDevice"); }

Status device_malloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  return status_of(cudaMalloc(ptr, bytes), "cudaMalloc");
}

Status device_free(void* ptr) { return status_of(cudaFree(ptr), "cudaFree"); }

Status copy_to_device(void* dst, const void* src, size_t bytes, Stream s) {
  return status_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(s)), "copy to the device");
}

Status copy_to_host(void* dst, const void* src, size_t bytes, Stream s) {
  return status_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(s)), "copy to the host");
}

Status copy_on_device(void* dst, const void* src, size_t bytes, Stream s) {
  return status_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(s)), "device copy");
}

Status fill_bytes(void* dst, int byte, size_t bytes, Stream s) {
  return status_of(cudaMemsetAsync(dst, byte, bytes, as_stream(s)), "cudaMemsetAsync");
}

Status stream_create(Stream* s) {
  cudaStream_t st = nullptr;
  Status r = status_of(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  *s = st;
  return r;
}

Status stream_destroy(Stream s) { return status_of(cudaStreamDestroy(as_stream(s)), "cudaStreamDestroy"); }

Status stream_sync(Stream s) { return status_of(cudaStreamSynchronize(as_stream(s)), "running on the GPU"); }

}  // namespace segmux::cuda
