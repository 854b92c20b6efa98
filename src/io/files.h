// Whole-file helpers every layer that reads or writes model files uses: read-only mapping and atomic
// writing (a temporary file renamed into place, so a failure never leaves a half-written file).
#pragma once
#include <memory>
#include <string>

#include "core/tensor.h"

namespace segmux {

// Maps a whole regular file read-only. The returned storage keeps the mapping alive.
std::shared_ptr<Storage> map_file(const std::string& path);

// Writes bytes to path via a temporary file and rename, so a failure leaves nothing half-written.
void write_file_atomic(const std::string& path, const void* data, size_t nbytes);

// Removes the entries of `dir` named <anything><marker><pid> whose process no longer runs: the
// unfinished outputs (staging folders, temporary files) of runs that were killed. Best effort.
void remove_abandoned_partials(const std::string& dir, const std::string& marker);

}  // namespace segmux
