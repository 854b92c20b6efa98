// Large buffers written once at start-up (prepacked weights, an executor's arena). Touching fresh memory
// page by page costs a page fault per 4 KiB, a good part of a model's start-up; a large buffer is its
// own mapping, faulted in by one madvise(MADV_POPULATE_WRITE) call instead.
#pragma once
#include <cstddef>
#include <memory>

namespace segmux {

// nbytes of zeroed memory, 64-byte aligned (at least 64 bytes); freed with the last pointer.
std::shared_ptr<void> allocate_zeroed_buffer(size_t nbytes);

}  // namespace segmux
