#include "runtime/verified_memo.h"

#include <sys/stat.h>

#include <filesystem>

#include "core/error.h"
#include "io/files.h"
#include "io/sha256.h"

namespace segmux {

namespace {

int64_t ns(const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

std::string identity(const std::string& file) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(file, ec).string();
  struct stat st {};
  if (ec || ::stat(abs.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return abs + "|" + std::to_string(uint64_t(st.st_dev)) + "|" + std::to_string(uint64_t(st.st_ino)) + "|" +
         std::to_string(st.st_size) + "|" + std::to_string(ns(st.st_mtim)) + "|" + std::to_string(ns(st.st_ctim));
}

}  // namespace

std::string verified_memo_path(const std::string& file, const std::string& memo_dir) {
  const std::string id = identity(file);
  if (id.empty() || memo_dir.empty()) return "";
  return memo_dir + "/" + sha256_hex(id.data(), id.size()).substr(0, 32) + ".verified";
}

void write_verified_memo(const std::string& memo_path, const std::string& file) {
  if (memo_path.empty()) return;
  try {
    std::filesystem::create_directories(std::filesystem::path(memo_path).parent_path());
    const std::string text = identity(file) + "\n";
    write_file_atomic(memo_path, text.data(), text.size());
  } catch (const std::exception&) {
    // Not writable: the next open verifies in full, as without a memo.
  }
}

}  // namespace segmux
