#include "service/resources.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include "core/error.h"
#include "io/files.h"

namespace segmux::service {

namespace fs = std::filesystem;

namespace {

const char* const kVideoExtensions[] = {".mp4", ".mov", ".webm", ".mkv", ".avi",
                                        ".m4v", ".gif", ".png",  ".jpg", ".jpeg"};

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_video_name(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  return std::any_of(std::begin(kVideoExtensions), std::end(kVideoExtensions), [&](const char* e) { return ext == e; });
}

// Whether canonical path p lies inside canonical folder root.
bool inside(const fs::path& p, const fs::path& root) {
  const fs::path rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != ".." && rel.is_relative();
}

constexpr const char* kUploadPrefix = "segmux-serve-";
constexpr const char* kLockName = "owner.lock";

// Removes the upload folders of dead servers in parent: ours (same user, a real folder, not a link)
// whose lock file exists and can be locked (a live server holds its lock; the kernel frees it when the
// process dies). A folder without a lock file (another server between mkdtemp and its lock, or an
// older segmux) is left alone.
void remove_stale_upload_dirs(const fs::path& parent) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kUploadPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    const int fd = ::open((e.path() / kLockName).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code rm;
      fs::remove_all(e.path(), rm);
    }
    ::close(fd);
  }
}

}  // namespace

std::string random_id(const std::string& replica) {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof(b)) {
    const ssize_t n = ::getrandom(b + got, sizeof(b) - got, 0);
    SEGMUX_CHECK(n > 0 || errno == EINTR, "getrandom failed: ", std::strerror(errno));
    if (n > 0) got += size_t(n);
  }
  b[6] = uint8_t((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = uint8_t((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static const char kHex[] = "0123456789abcdef";
  std::string id = replica.empty() ? "" : replica + ".";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) id += '-';
    id += kHex[b[i] >> 4];
    id += kHex[b[i] & 15];
  }
  return id;
}

ResourceStore::ResourceStore(const std::string& allow_dir, int64_t max_upload_bytes, int max_uploads,
                             std::string replica)
    : max_upload_bytes_(max_upload_bytes), max_uploads_(max_uploads), replica_(std::move(replica)) {
  if (!allow_dir.empty()) {
    std::error_code ec;
    const fs::path root = fs::canonical(allow_dir, ec);
    SEGMUX_CHECK(!ec && fs::is_directory(root), "--allow-dir ", allow_dir, ": not a folder");
    allow_dir_ = root.string();
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string parent = tmp && *tmp ? tmp : "/tmp";
  remove_stale_upload_dirs(parent);
  std::string pattern = parent + "/" + kUploadPrefix + "XXXXXX";
  SEGMUX_CHECK(::mkdtemp(pattern.data()) != nullptr, "cannot create the upload folder ", pattern, ": ",
               std::strerror(errno));
  upload_dir_ = pattern;
  // Locked before it gets its final name, so that no other server ever sees it unlocked.
  const std::string lock_tmp = upload_dir_ + "/" + kLockName + ".new";
  lock_fd_ = ::open(lock_tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const bool locked = lock_fd_ >= 0 && ::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0 &&
                      ::rename(lock_tmp.c_str(), (upload_dir_ + "/" + kLockName).c_str()) == 0;
  if (!locked) {
    const std::string why = std::strerror(errno);
    remove_now();
    throw Error("cannot lock the upload folder " + pattern + ": " + why);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  [[maybe_unused]] ssize_t n = ::write(lock_fd_, pid.data(), pid.size());
}

ResourceStore::~ResourceStore() { remove_now(); }

void ResourceStore::remove_now() {
  std::error_code ec;
  if (!upload_dir_.empty()) fs::remove_all(upload_dir_, ec);
  if (lock_fd_ >= 0) ::close(std::exchange(lock_fd_, -1));
}

std::string ResourceStore::resolve(const std::string& resource_path) const {
  if (resource_path.empty()) throw ServiceError(400, "'resource_path' is empty");
  if (resource_path.rfind("upload:", 0) == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploads_.find(resource_path.substr(7));
    if (it == uploads_.end()) throw ServiceError(404, "no upload '" + resource_path.substr(7) + "'");
    return it->second;
  }
  if (allow_dir_.empty())
    throw ServiceError(403, "resource_path '" + resource_path +
                                "': this server reads no server-side paths (start it with --allow-dir DIR); upload "
                                "the video instead");
  const fs::path root(allow_dir_);
  const fs::path given(resource_path);
  const fs::path p = given.is_absolute() ? given : root / given;
  std::error_code ec;
  const fs::path canon = fs::canonical(p, ec);
  // Not found and outside look the same to the client when the path leaves the folder.
  if (!inside(p.lexically_normal(), root) && (ec || !inside(canon, root)))
    throw ServiceError(403, "resource_path '" + resource_path + "' is outside the allowed folder");
  if (ec) throw ServiceError(404, "resource_path '" + resource_path + "' does not exist in the allowed folder");
  if (!inside(canon, root))
    throw ServiceError(403, "resource_path '" + resource_path + "' leads outside the allowed folder (a symlink)");
  if (fs::is_directory(canon)) {
    for (const auto& e : fs::directory_iterator(canon, ec)) {
      const fs::path f = fs::canonical(e.path(), ec);
      if (ec || !inside(f, root))
        throw ServiceError(403, "resource_path '" + resource_path + "': " + e.path().filename().string() +
                                    " leads outside the allowed folder (a symlink)");
    }
  } else if (!fs::is_regular_file(canon)) {
    throw ServiceError(400, "resource_path '" + resource_path + "' is not a file or a folder of frames");
  }
  return canon.string();
}

nlohmann::json ResourceStore::add_upload(const std::string& filename, const std::string& bytes) {
  if (bytes.empty()) throw ServiceError(400, "the upload is empty");
  if (int64_t(bytes.size()) > max_upload_bytes_)
    throw ServiceError(413, "the upload has " + std::to_string(bytes.size()) + " bytes (--max-body-bytes " +
                                std::to_string(max_upload_bytes_) + ")");
  const fs::path name(filename);
  if (!is_video_name(name))
    throw ServiceError(400, "upload '" + filename +
                                "': not a video, GIF or image name (expected .mp4 .mov .webm .mkv .avi .m4v .gif "
                                ".png .jpg .jpeg)");
  std::lock_guard<std::mutex> lock(mu_);
  if (int(uploads_.size()) >= max_uploads_)
    throw ServiceError(429, "the server holds " + std::to_string(uploads_.size()) + " uploads already (at most " +
                                std::to_string(max_uploads_) + ")");
  const std::string id = random_id(replica_);
  const std::string path = upload_dir_ + "/" + id + lower(name.extension().string());
  write_file_atomic(path, bytes.data(), bytes.size());
  uploads_[id] = path;
  upload_names_[path] = name.filename().string();
  return {{"upload_id", id}, {"resource_path", "upload:" + id}, {"bytes", bytes.size()}};
}

namespace {

constexpr std::string_view kPathEnds = " '\"`:,;()[]\n";

// How replace_path treats what follows a match: nothing (a folder prefix, the rest stays), a path end
// (the whole path, not a longer one it begins), or the rest of the path too.
enum class Match { prefix, whole, with_rest };

void replace_path(std::string& text, const std::string& path, const std::string& by, Match match) {
  if (path.empty()) return;
  for (size_t at = text.find(path); at != std::string::npos; at = text.find(path, at)) {
    size_t end = at + path.size();
    if (match == Match::with_rest)
      while (end < text.size() && kPathEnds.find(text[end]) == std::string_view::npos) ++end;
    if (match == Match::whole && end < text.size() && kPathEnds.find(text[end]) == std::string_view::npos) {
      at = end;
      continue;
    }
    text.replace(at, end - at, by);
    at += by.size();
  }
}

}  // namespace

std::string ResourceStore::public_text(std::string message) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [file, name] : upload_names_) replace_path(message, file, name, Match::whole);
  }
  replace_path(message, upload_dir_, "a temporary file of the server", Match::with_rest);
  if (!allow_dir_.empty()) {
    replace_path(message, allow_dir_ + "/", "", Match::prefix);
    replace_path(message, allow_dir_, "the allowed folder", Match::whole);
  }
  return message;
}

nlohmann::json ResourceStore::list_videos() const {
  nlohmann::json out = nlohmann::json::array();
  if (allow_dir_.empty()) return out;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(allow_dir_, ec))
    if (e.is_directory() || is_video_name(e.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) out.push_back(n);
  return out;
}

}  // namespace segmux::service
