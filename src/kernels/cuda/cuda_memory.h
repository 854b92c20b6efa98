// Host-side helpers over cuda_api.h: Status -> segmux::Error, device buffers, device tensors.
#pragma once
#include <memory>
#include <string>

#include "core/tensor.h"
#include "kernels/cuda/cuda_api.h"

namespace segmux::cuda {

// Throws segmux::Error "<context>: <message>" when st is a failure.
void check_cuda(Status st, const std::string& context);

// Fails with "no CUDA device: ..." (or "this segmux was built without the CUDA backend") unless a device
// is usable; selects device 0. Cheap after the first success.
void require_device();
// Number of usable devices (0 without a driver or device, or in a build without CUDA); never throws.
int usable_devices(std::string* why = nullptr);

// One cudaMalloc'd block, freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A Tensor whose storage is device memory (its raw() is a device pointer: never dereference it on the
// host). The buffer stays alive as long as the tensor.
Tensor device_tensor(DType dtype, const Shape& shape, const std::shared_ptr<DeviceBuffer>& buffer,
                     size_t byte_offset = 0);
// A fresh device tensor with the host tensor's dtype, shape and bytes (synchronous).
Tensor upload(const Tensor& host, Stream s);
// The device tensor's bytes copied into a fresh host tensor (synchronous).
Tensor download(const Tensor& device, Stream s);

// The stream the CUDA kernels of this thread launch on (set by the CUDA executor for a run).
Stream current_stream();
class StreamScope {
 public:
  explicit StreamScope(Stream s);
  ~StreamScope();

 private:
  Stream previous_;
};

}  // namespace segmux::cuda
