// The output folder of `segmux batch` and its protocol, safe with several processes (shards, a requeued
// shard beside a stale one) writing into it at once, on a local or shared file system:
//
//   DIR/<id>/                    a finished video (the outputs of `segmux track`); present = done
//   DIR/.staging/<id>/           the video being written; renamed to DIR/<id>/ in one step when complete
//   DIR/.staging/<id>.lock       held (flock) by the process writing <id>; the kernel releases it when
//                                that process dies, so a held lock means a live writer and a free lock
//                                beside a staging folder means an abandoned one (removed on claim)
//   DIR/.failed/<id>.json        a permanently bad video (unreadable, refused) and why: not retried
//   DIR/.summary/shard-I-of-N.json  the last run of each shard: counts, seconds, frames/s
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pipeline/batch/shard.h"

namespace segmux::pipeline {

// One video claimed by this process: an empty staging folder to write into, committed by one rename.
// Destroyed without commit(), it removes the staging folder (no partial output stays behind).
class VideoClaim {
 public:
  VideoClaim(std::string stage, std::string final_dir, std::string lock_path, int lock_fd);
  ~VideoClaim();
  VideoClaim(const VideoClaim&) = delete;
  VideoClaim& operator=(const VideoClaim&) = delete;
  const std::string& stage() const { return stage_; }
  // Renames the staging folder to DIR/<id>/. False (and the staging folder removed) when DIR/<id>/
  // appeared meanwhile: another process finished the same video first, and its outputs stay.
  bool commit();

 private:
  std::string stage_, final_, lock_path_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

class BatchFolder {
 public:
  // Creates DIR and its hidden folders (errors name the folder that cannot be made).
  explicit BatchFolder(const std::string& dir);
  const std::string& dir() const { return dir_; }
  bool done(const std::string& id) const;
  // The recorded reason of a permanently failed video, if any.
  std::optional<std::string> failure(const std::string& id) const;
  // DIR/.failed/<id>.json, written atomically; `record` must hold a "reason".
  void record_failure(const std::string& id, const nlohmann::json& record);
  // The video for this process, or nullptr when another live process holds it or, checked again
  // under the lock, it is done (done() tells which). Removes an abandoned staging folder.
  std::unique_ptr<VideoClaim> claim(const std::string& id);
  void write_summary(const Shard& shard, const nlohmann::json& summary);
  std::string summary_path(const Shard& shard) const;
  // Whether a video's failure with message `what` is the machine's, not the video's (try again later):
  // the message names a condition like a full disk, a lost file server or exhausted memory or files
  // (strerror of ENOSPC, EDQUOT, EIO, ESTALE, ENOMEM, EMFILE, ENFILE, ETIMEDOUT), or the output folder
  // no longer takes a small file.
  bool transient_failure(const std::string& what) const;
  // Removes DIR/.staging when nothing is left in it (the last shard to finish leaves no trace).
  void tidy();

 private:
  std::string dir_;
};

}  // namespace segmux::pipeline
