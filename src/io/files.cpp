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

void write_file_atomic(const std::string& path, const void* data, size_t nbytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  SEGMUX_CHECK(f != nullptr, "cannot write '", tmp, "': ", std::strerror(errno));
  size_t written = nbytes ? std::fwrite(data, 1, nbytes, f) : 0;
  bool ok = written == nbytes && std::fflush(f) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("cannot write '", path, "': ", std::strerror(errno));
  }
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
