#include "core/zeroed_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace segmux {

namespace {
constexpr size_t kMappedFrom = size_t(1) << 20;  // smaller buffers come from the heap
constexpr int kPopulateWrite = 23;               // MADV_POPULATE_WRITE (Linux 5.14; older kernels ignore it)
}  // namespace

std::shared_ptr<void> allocate_zeroed_buffer(size_t nbytes) {
  if (nbytes < kMappedFrom) {
    const size_t padded = std::max<size_t>(64, (nbytes + 63) / 64 * 64);
    void* p = std::aligned_alloc(64, padded);
    SEGMUX_CHECK(p != nullptr, "out of memory allocating ", nbytes, " bytes");
    std::memset(p, 0, padded);
    return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  // Anonymous mappings are zero; populating fails harmlessly where unsupported (then first writes fault).
  void* p = ::mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  SEGMUX_CHECK(p != MAP_FAILED, "out of memory allocating ", nbytes, " bytes");
  ::madvise(p, nbytes, kPopulateWrite);
  return std::shared_ptr<void>(p, [nbytes](void* q) { ::munmap(q, nbytes); });
}

}  // namespace segmux
