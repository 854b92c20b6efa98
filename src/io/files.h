// Whole-file helpers every layer that reads or writes model files uses: read-only mapping and atomic
// writing (a temporary file renamed into place, so a failure never leaves a half-written file).
#pragma once
#include <cstdio>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace segmux {

// Maps a whole regular file read-only. The returned storage keeps the mapping alive.
std::shared_ptr<Storage> map_file(const std::string& path);

// A file written under a temporary name beside its destination (<path>.tmp.<pid>) and renamed into
// place by commit(): a failure (a full disk, an exception, a killed process) never leaves a partial
// file under the final name, and the destructor removes the temporary file unless committed. Every
// error names the final path and says why (the errno of the failing call, e.g. "No space left on
// device").
//
//   AtomicFile out(path);
//   out.write(bytes, n);          // or hand out.stream() to a library that writes a FILE*
//   out.commit();                 // flush (+ fsync when asked), close, rename
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t nbytes);
  void write(const std::string& text) { write(text.data(), text.size()); }
  void commit(bool sync = false);
  // Throws the error of a failed write through stream() (or `err`), naming the file.
  [[noreturn]] void fail_write(int err) const;

  FILE* stream() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  void discard();
  std::string path_, tmp_;
  FILE* file_ = nullptr;
};

// Writes bytes to path via a temporary file and rename, so a failure leaves nothing half-written.
void write_file_atomic(const std::string& path, const void* data, size_t nbytes);

// Removes the entries of `dir` named <anything><marker><pid> whose process no longer runs: the
// unfinished outputs (staging folders, temporary files) of runs that were killed. Best effort.
void remove_abandoned_partials(const std::string& dir, const std::string& marker);

}  // namespace segmux
