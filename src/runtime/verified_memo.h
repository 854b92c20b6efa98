// "This .smx file had every checksum verified": a memo keyed by the file's identity (absolute path,
// device, inode, size, mtime and ctime in nanoseconds), so that opening a cached model again hashes
// only its small sections instead of gigabytes of weights. Any write to the file (in place, a copy
// over it, a replacement) changes its ctime or inode and so its key: a modified file is verified in
// full again. What a memo cannot see is a change below the file system (bit rot on the disk);
// `segmux verify-package` hashes everything.
#pragma once
#include <string>

namespace segmux {

// The memo's path in `memo_dir` for `file` as it is now; "" when the file cannot be stat'ed.
std::string verified_memo_path(const std::string& file, const std::string& memo_dir);
// Best effort (a read-only cache folder only means verifying in full next time).
void write_verified_memo(const std::string& memo_path, const std::string& file);

}  // namespace segmux
