// Where `segmux serve` finds videos: paths inside one allowed folder (--allow-dir; symlinks are
// resolved and must stay inside it, frame folders included) and uploads kept in a server-owned
// temporary folder that is removed when the server stops. Errors are ServiceError (status + message).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace segmux::service {

// A fresh id that cannot be guessed or repeat across replicas: an RFC 4122 version-4 UUID (122 bits
// from getrandom, the official API's session id format), after "REPLICA." when replica is not empty
// (a balancer can route by it). replica: 1-24 letters, digits, '_' or '-' (checked by the caller).
std::string random_id(const std::string& replica);

// A request the service refuses: an HTTP status (4xx: the client's fault, 503: busy) and a message
// naming the problem.
struct ServiceError : std::runtime_error {
  ServiceError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

class ResourceStore {
 public:
  // allow_dir: "" = no server-side paths; max_upload_bytes bounds one upload, max_uploads their count;
  // upload ids name replica (random_id). The upload folder ($TMPDIR/segmux-serve-*) holds a lock file
  // locked for the store's life; at start, the folders of servers that died (their lock is free, even
  // after kill -9) are removed, and no other folder is touched.
  ResourceStore(const std::string& allow_dir, int64_t max_upload_bytes, int max_uploads = 32, std::string replica = "");
  ~ResourceStore();   // removes the upload folder
  void remove_now();  // removes the upload folder (before a fast exit)
  ResourceStore(const ResourceStore&) = delete;
  ResourceStore& operator=(const ResourceStore&) = delete;

  // resource_path -> a local path to open: "upload:<id>" names an upload; anything else is a path
  // relative to (or absolute inside) the allowed folder.
  std::string resolve(const std::string& resource_path) const;
  // Stores an upload; filename gives the extension (a video, GIF or image). Returns
  // {"upload_id", "resource_path", "bytes"}.
  nlohmann::json add_upload(const std::string& filename, const std::string& bytes);
  // The allowed folder's videos, GIFs and frame folders (top level), for the page.
  nlohmann::json list_videos() const;
  const std::string& upload_dir() const { return upload_dir_; }
  // An error message as a client may see it: no server-side path. An upload's file becomes the name
  // it was uploaded as, anything else in the upload folder "a temporary file of the server", a path
  // inside the allowed folder becomes relative to it (as the client names it).
  std::string public_text(std::string message) const;
  int64_t max_upload_bytes() const { return max_upload_bytes_; }

 private:
  std::string allow_dir_;  // canonical, or ""
  std::string upload_dir_;
  int64_t max_upload_bytes_;
  int max_uploads_;
  std::string replica_;
  int lock_fd_ = -1;
  mutable std::mutex mu_;
  std::map<std::string, std::string> uploads_;       // id -> file
  std::map<std::string, std::string> upload_names_;  // file -> the name it was uploaded as
};

}  // namespace segmux::service
