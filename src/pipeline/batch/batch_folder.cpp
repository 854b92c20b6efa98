#include "pipeline/batch/batch_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/files.h"
#include "io/json_limits.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStaging = ".staging";
constexpr const char* kFailed = ".failed";
constexpr const char* kSummary = ".summary";
constexpr size_t kMaxRecordBytes = size_t(1) << 20;  // a reason and a few fields
constexpr int kLockAttempts = 100;                   // each lost only to another shard's rmdir
constexpr size_t kProbeBytes = size_t(64) << 10;     // what a healthy output folder surely takes

void make_folder(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  SEGMUX_CHECK(!ec && fs::is_directory(p), "cannot create folder '", p.string(), "'",
               ec ? ": " + ec.message() : std::string());
}

// The first `limit` bytes of a regular file ("" when it is not one or cannot be read).
std::string read_head(const fs::path& p, size_t limit) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return {};
  std::ifstream in(p, std::ios::binary);
  std::string text(limit, '\0');
  in.read(text.data(), std::streamsize(limit));
  text.resize(size_t(in.gcount()));
  return text;
}

}  // namespace

VideoClaim::VideoClaim(std::string stage, std::string final_dir, std::string lock_path, int lock_fd)
    : stage_(std::move(stage)), final_(std::move(final_dir)), lock_path_(std::move(lock_path)), lock_fd_(lock_fd) {}

VideoClaim::~VideoClaim() {
  std::error_code ec;
  if (!committed_) fs::remove_all(stage_, ec);
  // Unlinked while still held: a process waiting on the old file finds the video done under its lock.
  ::unlink(lock_path_.c_str());
  ::close(lock_fd_);
}

bool VideoClaim::commit() {
  if (::rename(stage_.c_str(), final_.c_str()) == 0) {
    committed_ = true;
    return true;
  }
  const int err = errno;
  // rename(2) replaces only an empty folder: a complete DIR/<id>/ of another process stays.
  if (err == ENOTEMPTY || err == EEXIST) return false;
  fail("cannot move '", stage_, "' to '", final_, "': ", std::strerror(err));
}

BatchFolder::BatchFolder(const std::string& dir) : dir_(dir) {
  make_folder(dir_);
  make_folder(fs::path(dir_) / kStaging);
  make_folder(fs::path(dir_) / kFailed);
  make_folder(fs::path(dir_) / kSummary);
}

bool BatchFolder::done(const std::string& id) const {
  std::error_code ec;
  return fs::is_directory(fs::path(dir_) / id, ec);
}

std::optional<std::string> BatchFolder::failure(const std::string& id) const {
  const fs::path p = fs::path(dir_) / kFailed / (id + ".json");
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  try {  // our own small record; anything else (truncated by hand, replaced) still counts as failed
    const nlohmann::json j = parse_untrusted_json(read_head(p, kMaxRecordBytes), p.string());
    if (j.is_object() && j.contains("reason") && j["reason"].is_string()) return j["reason"].get<std::string>();
  } catch (const Error&) {
  }
  return "(unreadable failure record " + p.string() + ")";
}

void BatchFolder::record_failure(const std::string& id, const nlohmann::json& record) {
  SEGMUX_CHECK(record.contains("reason"), "a failure record needs a reason");
  const std::string text = record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  write_file_atomic((fs::path(dir_) / kFailed / (id + ".json")).string(), text.data(), text.size());
}

std::unique_ptr<VideoClaim> BatchFolder::claim(const std::string& id) {
  const fs::path staging = fs::path(dir_) / kStaging;
  const std::string lock_path = (staging / (id + ".lock")).string();
  // Another shard's tidy() may remove the empty staging folder at any moment: make it again and
  // retry (once our lock file is in it, it is not empty and stays).
  int fd = -1;
  for (int attempt = 0; attempt < kLockAttempts && fd < 0; ++attempt) {
    make_folder(staging);
    fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 && errno != ENOENT) break;
  }
  SEGMUX_CHECK(fd >= 0, "cannot create the lock file '", lock_path, "': ", std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    SEGMUX_CHECK(err == EWOULDBLOCK, "cannot lock '", lock_path, "': ", std::strerror(err));
    return nullptr;  // a live process is writing this video
  }
  auto claim = std::make_unique<VideoClaim>((staging / id).string(), (fs::path(dir_) / id).string(), lock_path, fd);
  if (done(id)) return nullptr;  // finished by another process before we held the lock
  std::error_code ec;
  fs::remove_all(claim->stage(), ec);  // abandoned by a process that died (its lock was released)
  SEGMUX_CHECK(!ec, "cannot remove the abandoned staging folder '", claim->stage(), "': ", ec.message());
  make_folder(claim->stage());
  return claim;
}

std::string BatchFolder::summary_path(const Shard& shard) const {
  return (fs::path(dir_) / kSummary /
          ("shard-" + std::to_string(shard.index) + "-of-" + std::to_string(shard.count) + ".json"))
      .string();
}

void BatchFolder::write_summary(const Shard& shard, const nlohmann::json& summary) {
  const std::string text = summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  write_file_atomic(summary_path(shard), text.data(), text.size());
}

bool BatchFolder::transient_failure(const std::string& what) const {
  for (int err : {ENOSPC, EDQUOT, EIO, ESTALE, ENOMEM, EMFILE, ENFILE, ETIMEDOUT})
    if (what.find(std::strerror(err)) != std::string::npos) return true;
  try {
    make_folder(fs::path(dir_) / kStaging);  // removed when empty by another shard's tidy()
    const std::string probe = (fs::path(dir_) / kStaging / (".probe-" + std::to_string(::getpid()))).string();
    const std::string bytes(kProbeBytes, '\0');
    write_file_atomic(probe, bytes.data(), bytes.size());
    std::error_code ec;
    fs::remove(probe, ec);
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

void BatchFolder::tidy() {
  std::error_code ec;
  fs::remove(fs::path(dir_) / kStaging, ec);  // fails (and is left) while not empty
}

}  // namespace segmux::pipeline
