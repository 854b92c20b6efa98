#include "io/sha256.h"

#include <openssl/evp.h>

#include <fstream>

#include "core/error.h"

namespace segmux {

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
  Context() : md(EVP_MD_CTX_new()) {
    SEGMUX_CHECK(md != nullptr, "out of memory for a SHA-256 context");
    restart();
  }
  ~Context() { EVP_MD_CTX_free(md); }
  void restart() { SEGMUX_CHECK(EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1, "OpenSSL: SHA-256 init failed"); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t n) {
  if (n == 0) return;
  SEGMUX_CHECK(EVP_DigestUpdate(ctx_->md, data, n) == 1, "OpenSSL: SHA-256 update failed");
}

std::array<uint8_t, 32> Sha256::digest() {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  SEGMUX_CHECK(EVP_DigestFinal_ex(ctx_->md, out.data(), &len) == 1 && len == out.size(),
               "OpenSSL: SHA-256 final failed");
  ctx_->restart();
  return out;
}

std::string Sha256::hex_digest() {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : digest()) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::string sha256_hex(const void* data, size_t n) {
  Sha256 h;
  h.update(data, n);
  return h.hex_digest();
}

std::string sha256_file(const std::string& path, uint64_t* bytes) {
  std::ifstream in(path, std::ios::binary);
  SEGMUX_CHECK(in.good(), "cannot read '", path, "'");
  Sha256 h;
  // Not zero-filled: a small file touches only the pages it fills (a package check hashes many).
  constexpr size_t kBuf = size_t(1) << 20;
  const std::unique_ptr<char[]> buf(new char[kBuf]);
  uint64_t total = 0;
  while (in) {
    in.read(buf.get(), std::streamsize(kBuf));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    h.update(buf.get(), size_t(got));
    total += uint64_t(got);
  }
  SEGMUX_CHECK(in.eof(), "error while reading '", path, "'");
  if (bytes) *bytes = total;
  return h.hex_digest();
}

}  // namespace segmux
