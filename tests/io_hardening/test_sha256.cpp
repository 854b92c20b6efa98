// The streaming hash is the same whatever the pieces it is fed in, and a finished hash starts over.
#include <gtest/gtest.h>

#include <string>

#include "io/sha256.h"

namespace segmux {
namespace {

constexpr const char* kMillionA = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(Sha256, MillionAInAnyPieces) {
  // FIPS 180-2 appendix B.3: one million 'a'.
  const std::string a(1000000, 'a');
  EXPECT_EQ(sha256_hex(a.data(), a.size()), kMillionA);
  Sha256 h;
  size_t pos = 0, step = 1;
  while (pos < a.size()) {  // pieces of 1, 2, 3 ... bytes: every alignment against the 64-byte blocks
    const size_t n = std::min(step++, a.size() - pos);
    h.update(a.data() + pos, n);
    pos += n;
  }
  EXPECT_EQ(h.hex_digest(), kMillionA);
}

TEST(Sha256, DigestResetsAndMovesKeepState) {
  Sha256 h;
  h.update("abc", 3);
  Sha256 moved(std::move(h));
  EXPECT_EQ(moved.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // After a digest the object hashes from scratch: the empty message.
  EXPECT_EQ(moved.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace segmux
