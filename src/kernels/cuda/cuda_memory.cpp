#include "kernels/cuda/cuda_memory.h"

#include <mutex>

namespace segmux::cuda {

namespace {
thread_local Stream g_stream = nullptr;
}

void check_cuda(Status st, const std::string& context) {
  if (st) fail(context, ": ", st);
}

int usable_devices(std::string* why) {
  if (!backend_compiled()) {
    if (why) *why = "this segmux was built without the CUDA backend (SEGMUX_CUDA=OFF or no CUDA toolkit)";
    return 0;
  }
  int count = 0;
  if (Status st = device_count(&count)) {
    if (why) *why = st;
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device (the driver reports none, or no driver is installed)";
  return count;
}

void require_device() {
  static std::once_flag once;
  static int devices = 0;
  static std::string why;
  std::call_once(once, [] {
    devices = usable_devices(&why);
    if (devices > 0) {
      if (Status st = set_device(0)) {
        devices = 0;
        why = st;
      }
    }
  });
  SEGMUX_CHECK(devices > 0, "CUDA backend: ", why);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  check_cuda(device_malloc(&data_, std::max<size_t>(bytes, 1)),
             "allocating " + std::to_string(bytes) + " bytes of GPU memory");
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) device_free(data_);  // nothing to do about a failure in a destructor
}

Tensor device_tensor(DType dtype, const Shape& shape, const std::shared_ptr<DeviceBuffer>& buffer, size_t byte_offset) {
  const size_t bytes = size_t(shape_numel(shape)) * dtype_size(dtype);
  SEGMUX_CHECK(byte_offset <= buffer->bytes() && bytes <= buffer->bytes() - byte_offset, "device tensor of ", bytes,
               " bytes at offset ", byte_offset, " overruns its ", buffer->bytes(), "-byte buffer");
  auto storage = Storage::borrow(buffer->data(), buffer->bytes(), buffer);
  return Tensor(dtype, shape, storage, byte_offset);
}

Tensor upload(const Tensor& host, Stream s) {
  auto buffer = std::make_shared<DeviceBuffer>(host.nbytes());
  if (host.nbytes()) check_cuda(copy_to_device(buffer->data(), host.raw(), host.nbytes(), s), "uploading a tensor");
  check_cuda(stream_sync(s), "uploading a tensor");
  return device_tensor(host.dtype(), host.shape(), buffer);
}

Tensor download(const Tensor& device, Stream s) {
  Tensor host(device.dtype(), device.shape());
  if (host.nbytes()) check_cuda(copy_to_host(host.raw(), device.raw(), host.nbytes(), s), "downloading a tensor");
  check_cuda(stream_sync(s), "downloading a tensor");
  return host;
}

Stream current_stream() { return g_stream; }
StreamScope::StreamScope(Stream s) : previous_(g_stream) { g_stream = s; }
StreamScope::~StreamScope() { g_stream = previous_; }

}  // namespace segmux::cuda
