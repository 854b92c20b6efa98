// SHA-256, streaming: package manifests and the model cache's content keys hash multi-gigabyte
// checkpoints without holding them in memory. OpenSSL's libcrypto does the hashing (with the CPU's SHA
// extensions where it has them); this header keeps OpenSSL out of every other file.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace segmux {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, size_t n);
  std::array<uint8_t, 32> digest();  // finishes; the object is then reset
  std::string hex_digest();          // 64 lowercase hex digits

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

std::string sha256_hex(const void* data, size_t n);
// Reads the file in 1 MiB pieces. Error naming the file when it cannot be read; *bytes gets its size.
std::string sha256_file(const std::string& path, uint64_t* bytes = nullptr);

}  // namespace segmux
