#include "io/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/mapped_pages.h"
#include "io/printable.h"

namespace segmux {

std::shared_ptr<Storage> map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused as not regular below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  SEGMUX_CHECK(fd >= 0, "cannot open '", printable(path), "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("'", printable(path), "' is not a regular file");
  }
  size_t size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Storage::allocate(0);
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  SEGMUX_CHECK(p != MAP_FAILED, "cannot mmap '", printable(path), "': ", std::strerror(errno));
  register_mapped_range(p, size);  // PROT_READ + MAP_PRIVATE: its pages may be dropped and read again
  auto owner = std::shared_ptr<void>(p, [size](void* q) {
    unregister_mapped_range(q);
    ::munmap(q, size);
  });
  return Storage::borrow(p, size, owner);
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  file_ = std::fopen(tmp_.c_str(), "wb");
  SEGMUX_CHECK(file_ != nullptr, "cannot write '", printable(path_), "': cannot create '", printable(tmp_),
               "': ", std::strerror(errno));
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
  if (!tmp_.empty()) std::remove(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::fail_write(int err) const {
  fail("cannot write '", printable(path_), "': ", err ? std::strerror(err) : "the write failed");
}

void AtomicFile::write(const void* data, size_t nbytes) {
  SEGMUX_CHECK(file_ != nullptr, "'", printable(path_), "' is already committed");
  if (nbytes && std::fwrite(data, 1, nbytes, file_) != nbytes) fail_write(errno);
}

void AtomicFile::commit(bool sync) {
  SEGMUX_CHECK(file_ != nullptr, "'", printable(path_), "' is already committed");
  errno = 0;
  if (std::ferror(file_) || std::fflush(file_) != 0 || (sync && ::fsync(::fileno(file_)) != 0)) fail_write(errno);
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) fail_write(errno);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail_write(errno);
  tmp_.clear();
}

void write_file_atomic(const std::string& path, const void* data, size_t nbytes) {
  AtomicFile out(path);
  out.write(data, nbytes);
  out.commit();
}

namespace {

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

}  // namespace

void remove_abandoned_partials(const std::string& dir, const std::string& marker) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.rfind(marker);
    if (at == std::string::npos || at + marker.size() >= name.size()) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + at + marker.size(), &end, 10);
    if (end && *end == '\0' && !process_alive(pid)) std::filesystem::remove_all(e.path(), ec);
  }
}

}  // namespace segmux
