// Read-only file mappings (io/files.h map_file) register here, so that code in any layer can let the
// pages of such a mapping leave this process's resident set once it has read them (a checksum, a
// weight repacked into another layout): a later read maps them again from the page cache or the file.
// Memory that is not a registered mapping is never touched, so callers need not know where bytes live.
#pragma once
#include <cstddef>

namespace segmux {

void register_mapped_range(const void* begin, size_t nbytes);
void unregister_mapped_range(const void* begin);
// Drops the whole pages of [p, p + nbytes) that lie inside one registered mapping from the resident set
// (madvise MADV_DONTNEED on a private read-only mapping: contents stay as in the file). No-op otherwise.
void release_mapped_pages(const void* p, size_t nbytes);
// Bytes of registered mappings (for reports and tests).
size_t mapped_bytes();

}  // namespace segmux
