// A build without the CUDA toolkit (SEGMUX_CUDA=OFF, or AUTO without it): the device interface exists
// so that everything above it compiles and links, and every call says the backend is missing.
#ifndef SEGMUX_HAVE_CUDA
#include "kernels/cuda/cuda_api.h"

namespace segmux::cuda {

namespace {
constexpr Status kAbsent = "this segmux was built without the CUDA backend (SEGMUX_CUDA=OFF or no CUDA toolkit)";
}

bool backend_compiled() { return false; }
Status device_count(int* count) {
  *count = 0;
  return nullptr;
}
Status device_describe(int, char*, size_t) { return kAbsent; }
Status device_versions(char*, size_t) { return kAbsent; }
Status set_device(int) { return kAbsent; }
Status device_malloc(void** ptr, size_t) {
  *ptr = nullptr;
  return kAbsent;
}
Status device_free(void*) { return nullptr; }
Status copy_to_device(void*, const void*, size_t, Stream) { return kAbsent; }
Status copy_to_host(void*, const void*, size_t, Stream) { return kAbsent; }
Status copy_on_device(void*, const void*, size_t, Stream) { return kAbsent; }
Status fill_bytes(void*, int, size_t, Stream) { return kAbsent; }
Status stream_create(Stream* s) {
  *s = nullptr;
  return kAbsent;
}
Status stream_destroy(Stream) { return nullptr; }
Status stream_sync(Stream) { return kAbsent; }
Status launch_pointwise(const PointwiseProgram&, const Broadcast&, int, const float* const*, float*, int64_t, Stream) {
  return kAbsent;
}
Status launch_compare(Compare, ScalarKind, const Broadcast&, const void*, const void*, uint8_t*, int64_t, Stream) {
  return kAbsent;
}
Status launch_int_binary(Step, ScalarKind, const Broadcast&, const void*, const void*, void*, int64_t, Stream) {
  return kAbsent;
}
Status launch_where(const Broadcast&, const uint8_t*, const void*, const void*, void*, int, int64_t, Stream) {
  return kAbsent;
}
Status launch_not(const uint8_t*, uint8_t*, int64_t, Stream) { return kAbsent; }
Status launch_cast(ScalarKind, ScalarKind, const void*, void*, int64_t, Stream) { return kAbsent; }
Status launch_strided_copy(const StridedCopy&, const void*, void*, int, Stream) { return kAbsent; }
Status launch_gather(const void*, const int64_t*, void*, int64_t, int64_t, int64_t, int64_t, int, Stream) {
  return kAbsent;
}
Status launch_gather_elements(const GatherElements&, const void*, const int64_t*, void*, int, Stream) {
  return kAbsent;
}
Status launch_axis_gather(const AxisGather&, const void*, const int64_t*, void*, int, Stream) { return kAbsent; }
Status launch_roi_align(const RoiAlignShape&, const float*, const float*, const int64_t*, float*, Stream) {
  return kAbsent;
}
Status launch_im2col(const Im2Col&, const float*, float*, Stream) { return kAbsent; }
Status launch_rope(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, Stream) {
  return kAbsent;
}
Status launch_argmax(const float*, int64_t*, int64_t, int64_t, int64_t, bool, Stream) { return kAbsent; }
Status launch_layer_norm(const float*, const float*, const float*, float*, int64_t, int64_t, float, Stream) {
  return kAbsent;
}
Status launch_group_norm(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t, float,
                         Stream) {
  return kAbsent;
}
Status launch_softmax(const float*, float*, int64_t, int64_t, Stream) { return kAbsent; }
Status launch_reduce(Reduce, const float*, float*, int64_t, int64_t, int64_t, Stream) { return kAbsent; }
Status launch_attention(const AttentionShape&, const float*, const float*, const float*, const void*, float*, Stream) {
  return kAbsent;
}
Status launch_gemm(const GemmShape&, const void*, const void*, const float*, const float*, float*, Stream) {
  return kAbsent;
}

}  // namespace segmux::cuda
#endif
