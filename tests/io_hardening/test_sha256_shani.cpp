// The SHA-NI compression (io/sha256_shani.cpp) gives the portable loop's bits on any data, and the
// streaming hash is the same whatever the pieces it is fed in.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/sha256.h"
#include "io/sha256_blocks.h"

namespace segmux {
namespace {

TEST(Sha256Shani, SameStateAsThePortableLoop) {
  if (!sha256_detail::shani_available()) GTEST_SKIP() << "no SHA extensions on this CPU";
  std::mt19937 rng(7);
  for (size_t nblocks : {size_t(1), size_t(2), size_t(3), size_t(17), size_t(1000)}) {
    std::vector<uint8_t> data(nblocks * 64);
    for (auto& b : data) b = uint8_t(rng());
    uint32_t a[8], b[8];
    for (int i = 0; i < 8; ++i) a[i] = b[i] = uint32_t(rng());
    sha256_detail::blocks_portable(a, data.data(), nblocks);
    sha256_detail::blocks_shani(b, data.data(), nblocks);
    EXPECT_EQ(0, std::memcmp(a, b, sizeof a)) << nblocks << " blocks";
  }
}

TEST(Sha256Shani, MillionAAndAnyPieces) {
  // FIPS 180-2 appendix B.3: one million 'a'.
  const std::string a(1000000, 'a');
  EXPECT_EQ(sha256_hex(a.data(), a.size()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 h;
  size_t pos = 0, step = 1;
  while (pos < a.size()) {  // pieces of 1, 2, 3 ... bytes: every alignment against the 64-byte blocks
    const size_t n = std::min(step++, a.size() - pos);
    h.update(a.data() + pos, n);
    pos += n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace segmux
