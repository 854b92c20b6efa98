// Start-up buffers (prepacked weights, arenas): zeroed, aligned and writable, from the heap or mapped.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/zeroed_buffer.h"

using namespace segmux;

TEST(ZeroedBuffer, SmallAndLargeBuffersAreZeroedAlignedAndWritable) {
  for (size_t n : {size_t(0), size_t(1), size_t(100), size_t(1) << 20, (size_t(3) << 20) + 12345}) {
    auto b = allocate_zeroed_buffer(n);
    ASSERT_NE(b.get(), nullptr) << n;
    EXPECT_EQ(uintptr_t(b.get()) % 64, 0u) << n;
    const size_t usable = n < 64 ? 64 : n;
    auto* bytes = static_cast<unsigned char*>(b.get());
    size_t nonzero = 0;
    for (size_t i = 0; i < usable; ++i) nonzero += bytes[i] != 0;
    EXPECT_EQ(nonzero, 0u) << n;
    std::memset(bytes, 0xab, usable);
    EXPECT_EQ(bytes[usable - 1], 0xab) << n;
  }
}
