// The model cache's housekeeping: the checkpoint content hash (memoised per file version), entries'
// last use, and `segmux cache list|clear|prune`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "deploy/model_store/model_store.h"

namespace segmux::pipeline {

// sha256 of the checkpoint's bytes. Hashing a 3.4 GB file takes seconds, so the result is memoised in
// CACHE/checkpoint-hashes/ under the file's identity: path, device, inode, size, mtime and ctime in
// nanoseconds, plus a sha256 of three 64 KiB samples (start, middle, end) read again every time.
// Rewriting a file changes its ctime even when `cp -p`, `rsync -t` or `tar` restore size and mtime,
// and a replaced file has a new inode or ctime, so a changed checkpoint is always hashed again.
std::string checkpoint_content_hash(const std::string& path, const std::string& cache_dir, const LogFn& log);

// The sha256 of the sources that decide a compiled model's bytes (compiler, model graphs, kernels and
// their prepacking, the offline format, packages, this store) and of the toolchain, made by CMake at
// build time (cmake/code_hash.cmake). Part of the cache key instead of the running binary's identity, so
// the segmux command, libsegmux (Python, C programs) and every rebuild of the same code share entries.
std::string compiled_code_hash();

// Where memos of compiled files verified in full are kept (runtime/verified_memo.h): CACHE/verified-models.
// Opening a model verified before then hashes no weights; `clear` removes them.
std::string verified_memo_dir(const std::string& cache_dir);

// Records that the entry `dir` was just used (its folder's mtime), for `prune`.
void mark_used(const std::string& dir);

struct CacheEntry {
  std::string path;
  std::string name;        // folder name
  uint64_t bytes = 0;      // files in it
  int64_t last_used = 0;   // seconds since the epoch
  std::string checkpoint;  // file name recorded in its manifest ("" for entries made before manifests)
  std::string config;      // config name
  bool partial = false;    // an unfinished build (ENTRY.partial-<pid>)
};

// The entries of a cache folder (compiled models, unfinished builds), most recently used first.
// Folders that are not ours (no model.json, not a .partial-) are never listed nor touched.
std::vector<CacheEntry> list_cache(const std::string& cache_dir);

struct CacheCleanup {
  int removed = 0;
  uint64_t bytes_freed = 0, bytes_left = 0;
};
// Removes every entry, unfinished builds of processes that no longer run, and the hash memos.
CacheCleanup clear_cache(const std::string& cache_dir);
// Removes least recently used entries until the complete ones total at most max_bytes.
CacheCleanup prune_cache(const std::string& cache_dir, uint64_t max_bytes);

// "10G", "500M", "1.5GB", "123" (bytes) -> bytes; error naming the text otherwise.
uint64_t parse_size(const std::string& text);

}  // namespace segmux::pipeline
