// The C API's checks of what callers give, before anything runs: paths (NOT_FOUND when absent, never
// blocking on a FIFO), checkpoints recognised from their first bytes, prompts (UTF-8 text, labels,
// finite coordinates, frame indices). A refused request changes nothing, so every check runs before
// the session is touched.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "capi/capi_checks.h"
#include "core/error_kind.h"
#include "io/file_kind.h"
#include "io/printable.h"

namespace segmux::capi {

namespace {

std::string quoted(const std::string& path) { return "'" + printable(path) + "'"; }

// The first bytes of a regular file and its size (no file: fails as NOT_FOUND).
std::vector<std::byte> first_bytes(const std::string& path, size_t n, int64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail_as(ErrorKind::NotFound, "cannot open ", quoted(path), ": ", std::strerror(errno));
  struct stat st {};
  std::vector<std::byte> out(n);
  ssize_t got = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) got = ::pread(fd, out.data(), n, 0);
  ::close(fd);
  if (got < 0) fail_as(ErrorKind::Io, "cannot read ", quoted(path));
  out.resize(size_t(got));
  size = st.st_size;
  return out;
}

}  // namespace

void check_existing_path(const std::string& what, const std::string& path, PathKind kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail_as(ErrorKind::NotFound, what, " ", quoted(path), " does not exist (", std::strerror(errno), ")");
  const bool dir = S_ISDIR(st.st_mode), file = S_ISREG(st.st_mode);
  if (kind == PathKind::folder && !dir)
    fail_as(ErrorKind::InvalidArgument, what, " ", quoted(path), " is not a folder");
  if (kind == PathKind::file && !file)
    fail_as(ErrorKind::InvalidArgument, what, " ", quoted(path), " is not a regular file");
  if (kind == PathKind::file_or_folder && !file && !dir)
    fail_as(ErrorKind::InvalidArgument, what, " ", quoted(path),
            " is neither a regular file nor a folder (a pipe or device would block or never end)");
}

void check_checkpoint_file(const std::string& what, const std::string& path) {
  check_existing_path(what, path, PathKind::file);
  int64_t size = 0;
  const std::vector<std::byte> head = first_bytes(path, 64, size);
  // A safetensors header length is checked against the whole file, not the 64 bytes read.
  uint64_t header_len = 0;
  if (head.size() >= 9) std::memcpy(&header_len, head.data(), 8);
  if (head.size() >= 9 && header_len <= uint64_t(size) - 8 && char(head[8]) == '{') return;
  const FileKind kind = sniff_file_kind(head.data(), head.size());
  if (kind == FileKind::pytorch_zip) return;
  const std::string is = describe_file_kind(head.data(), head.size());
  if (kind == FileKind::raw_pickle) fail_as(ErrorKind::Unsupported, what, " ", quoted(path), " is ", is);
  fail_as(ErrorKind::CorruptFile, what, " ", quoted(path), " is ", is,
          ", not a SAM 3.1 checkpoint (.pt or .safetensors)");
}

void check_text(const std::string& what, const char* text) {
  if (!text) return;
  const std::string_view t(text);
  const size_t bad = first_invalid_utf8(t);
  if (bad != std::string_view::npos)
    fail_as(ErrorKind::InvalidArgument, what, " is not valid UTF-8 (byte ", bad, " of \"", printable(t), "\")");
}

void check_labels(const std::string& what, const int* labels, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (labels[i] != 0 && labels[i] != 1)
      fail_as(ErrorKind::InvalidArgument, what, "[", i, "] is ", labels[i], " (1 positive, 0 negative)");
}

void check_finite(const std::string& what, const float* values, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(values[i]))
      fail_as(ErrorKind::InvalidArgument, what, "[", i, "] is ", values[i], " (coordinates are finite, normalised)");
}

void check_frame_index(const std::string& what, int64_t index, int num_frames, bool live) {
  if (index < 0) fail_as(ErrorKind::InvalidArgument, what, " ", index, " is negative");
  if (!live && index >= num_frames)
    fail_as(ErrorKind::InvalidArgument, what, " ", index, " is not a frame of this video (it has ", num_frames,
            " frames: 0..", num_frames - 1, ")");
}

}  // namespace segmux::capi
