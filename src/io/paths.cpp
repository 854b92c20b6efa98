#include "io/paths.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "io/printable.h"

namespace segmux {

namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

}  // namespace

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  SEGMUX_CHECK(::stat(path.c_str(), &st) == 0, "cannot read ", what, " '", printable(path),
               "': ", std::strerror(errno));
  SEGMUX_CHECK(S_ISREG(st.st_mode), what, " '", printable(path), "' is ", file_type_name(st.st_mode),
               ", not a regular file");
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!ec && std::filesystem::is_directory(path, ec)) return;
  fail("cannot create the folder '", printable(path), "': ", ec ? ec.message() : "a file of that name is in the way");
}

}  // namespace segmux
