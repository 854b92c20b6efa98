#include "deploy/model_store/cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <segmux_code_hash.h>  // generated in the build tree (cmake/code_hash.cmake)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/files.h"
#include "io/json_limits.h"
#include "io/sha256.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHashDir = "checkpoint-hashes";
constexpr const char* kVerifiedDir = "verified-models";

int64_t ns(const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

nlohmann::json file_identity(const std::string& abs, const struct stat& st) {
  return {{"path", abs},        {"dev", uint64_t(st.st_dev)}, {"inode", uint64_t(st.st_ino)},
          {"size", st.st_size}, {"mtime_ns", ns(st.st_mtim)}, {"ctime_ns", ns(st.st_ctim)}};
}

// sha256 of 64 KiB at the start, the middle and the end: a cheap content check on every use.
std::string sample_hash(const std::string& path, int64_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SEGMUX_CHECK(fd >= 0, "cannot read checkpoint '", path, "'");
  Sha256 h;
  std::vector<char> buf(64 << 10);
  for (int64_t off : {int64_t(0), size / 2, std::max<int64_t>(0, size - int64_t(buf.size()))}) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), off);
    if (n > 0) h.update(buf.data(), size_t(n));
  }
  ::close(fd);
  return h.hex_digest();
}

bool is_partial_name(const std::string& name) { return name.find(".partial-") != std::string::npos; }

pid_t partial_pid(const std::string& name) {
  const size_t at = name.rfind(".partial-");
  try {
    return pid_t(std::stol(name.substr(at + 9)));
  } catch (...) {
    return 0;
  }
}

uint64_t folder_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += it->file_size(ec);
  return total;
}

}  // namespace

std::string compiled_code_hash() { return SEGMUX_CODE_HASH; }

std::string verified_memo_dir(const std::string& cache_dir) { return cache_dir + "/" + kVerifiedDir; }

std::string checkpoint_content_hash(const std::string& path, const std::string& cache_dir, const LogFn& log) {
  struct stat st {};
  SEGMUX_CHECK(::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode), "cannot read checkpoint '", path, "'");
  const std::string abs = fs::absolute(path).lexically_normal().string();
  const nlohmann::json id = file_identity(abs, st);
  const std::string memo =
      cache_dir + "/" + kHashDir + "/" + sha256_hex(abs.data(), abs.size()).substr(0, 24) + ".json";
  const std::string sample = sample_hash(path, st.st_size);
  if (fs::exists(memo)) {
    try {
      nlohmann::json m = read_untrusted_json_file(memo);
      if (m.value("identity", nlohmann::json()) == id && m.value("sample", "") == sample && m.contains("sha256") &&
          m["sha256"].is_string() && m["sha256"].get<std::string>().size() == 64)
        return m["sha256"].get<std::string>();
    } catch (const std::exception&) {
      // A damaged memo is only a lost shortcut: hash again below.
    }
  }
  log("hashing the checkpoint " + path + " (once per version of the file)");
  const std::string sha = sha256_file(path);
  struct stat after {};
  // Written while we read it: the hash may mix two versions, so it is used but not remembered.
  if (::stat(path.c_str(), &after) == 0 && file_identity(abs, after) == id) {
    fs::create_directories(cache_dir + "/" + kHashDir);
    const std::string text = nlohmann::json{{"identity", id}, {"sample", sample}, {"sha256", sha}}.dump(2);
    write_file_atomic(memo, text.data(), text.size());
  }
  return sha;
}

void mark_used(const std::string& dir) {
  ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);  // best effort: now
}

std::vector<CacheEntry> list_cache(const std::string& cache_dir) {
  std::vector<CacheEntry> out;
  if (!fs::is_directory(cache_dir)) return out;
  for (const auto& e : fs::directory_iterator(cache_dir)) {
    if (!e.is_directory() || e.is_symlink()) continue;
    CacheEntry c;
    c.path = e.path().string();
    c.name = e.path().filename().string();
    c.partial = is_partial_name(c.name);
    if (!c.partial && !fs::is_regular_file(e.path() / "model.json")) continue;  // not ours
    c.bytes = folder_bytes(e.path());
    struct stat st {};
    if (::stat(c.path.c_str(), &st) == 0) c.last_used = st.st_mtim.tv_sec;
    try {
      if (fs::exists(e.path() / "manifest.json")) {
        nlohmann::json m = read_untrusted_json_file((e.path() / "manifest.json").string());
        c.checkpoint = m["checkpoint"].value("file", "");
        c.config = m["config"].value("name", "");
      }
    } catch (const std::exception&) {
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const CacheEntry& a, const CacheEntry& b) {
    return a.last_used != b.last_used ? a.last_used > b.last_used : a.name < b.name;
  });
  return out;
}

CacheCleanup clear_cache(const std::string& cache_dir) {
  CacheCleanup r;
  for (const CacheEntry& c : list_cache(cache_dir)) {
    const pid_t pid = c.partial ? partial_pid(c.name) : 0;
    if (pid > 0 && ::kill(pid, 0) == 0) {  // a build still running: leave it
      r.bytes_left += c.bytes;
      continue;
    }
    std::error_code ec;
    fs::remove_all(c.path, ec);
    if (ec) {
      r.bytes_left += c.bytes;
      continue;
    }
    ++r.removed;
    r.bytes_freed += c.bytes;
  }
  std::error_code ec;
  fs::remove_all(cache_dir + "/" + kHashDir, ec);
  fs::remove_all(cache_dir + "/" + kVerifiedDir, ec);
  return r;
}

CacheCleanup prune_cache(const std::string& cache_dir, uint64_t max_bytes) {
  CacheCleanup r;
  remove_abandoned_partials(cache_dir, ".partial-");
  std::vector<CacheEntry> entries = list_cache(cache_dir);
  uint64_t total = 0;
  for (const CacheEntry& c : entries) total += c.partial ? 0 : c.bytes;
  for (auto it = entries.rbegin(); it != entries.rend() && total > max_bytes; ++it) {  // oldest first
    if (it->partial) continue;
    std::error_code ec;
    fs::remove_all(it->path, ec);
    if (ec) continue;
    ++r.removed;
    r.bytes_freed += it->bytes;
    total -= it->bytes;
  }
  r.bytes_left = total;
  return r;
}

uint64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
  double mult = 0;
  if (unit.empty())
    mult = 1;
  else if (unit == "K" || unit == "k")
    mult = 1024.0;
  else if (unit == "M" || unit == "m")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t")
    mult = 1024.0 * 1024 * 1024 * 1024;
  SEGMUX_CHECK(used > 0 && mult > 0 && std::isfinite(v) && v >= 0 && v * mult < 1.8e19, "size '", text,
               "' is not a size (e.g. 10G, 500M, 123456)");
  return uint64_t(v * mult);
}

}  // namespace segmux::pipeline
