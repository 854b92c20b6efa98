// SHA-256 (FIPS 180-4), streaming: package manifests and the model cache's content keys hash
// multi-gigabyte checkpoints without holding them in memory. Debian's libssl-dev would do the same; a
// hundred lines here avoid a new build dependency.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace segmux {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::array<uint8_t, 32> digest();  // finishes; the object is then reset
  std::string hex_digest();          // 64 lowercase hex digits

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_{};
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes hashed
};

std::string sha256_hex(const void* data, size_t n);
// Reads the file in 1 MiB pieces. Error naming the file when it cannot be read; *bytes gets its size.
std::string sha256_file(const std::string& path, uint64_t* bytes = nullptr);

}  // namespace segmux
