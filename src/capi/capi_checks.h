// Checks of the C API's inputs (capi_checks.cpp). Each throws a KindedError (core/error_kind.h) whose
// kind becomes the returned status: NOT_FOUND, INVALID_ARGUMENT, CORRUPT_FILE, UNSUPPORTED, IO.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error_kind.h"

namespace segmux::capi {

enum class PathKind { file, folder, file_or_folder };

// `path` exists (else NOT_FOUND) and is of that kind (else INVALID_ARGUMENT); `what` names it in the
// message ("options.checkpoint").
void check_existing_path(const std::string& what, const std::string& path, PathKind kind);
// A regular file whose first bytes are a safetensors header or a zip archive (a PyTorch checkpoint);
// other content is CORRUPT_FILE (or UNSUPPORTED for a legacy raw pickle), named in the message.
void check_checkpoint_file(const std::string& what, const std::string& path);
// Well-formed UTF-8 (NULL passes).
void check_text(const std::string& what, const char* text);
// Every label 0 or 1.
void check_labels(const std::string& what, const int* labels, size_t n);
// Every value finite.
void check_finite(const std::string& what, const float* values, size_t n);
// 0 <= index, and index < num_frames unless the session is live (whose frames arrive later).
void check_frame_index(const std::string& what, int64_t index, int num_frames, bool live);

// Runs `read` on a file that exists (checked before): a failure of no known kind is the content's
// (CORRUPT_FILE: not a video or image the decoders read), with its message.
template <typename Read>
auto reading_existing_file(Read&& read) {
  try {
    return read();
  } catch (const KindedError&) {
    throw;
  } catch (const Error& e) {
    throw KindedError(ErrorKind::CorruptFile, e.what());
  }
}

}  // namespace segmux::capi
