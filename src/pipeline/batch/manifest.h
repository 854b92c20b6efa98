// The manifest of `segmux batch`: the videos of a dataset, one per line. A line is either a path (the
// video's id is its file name without the extension) or a JSON object with "path" and optional "id",
// "prompts" (or "prompt"), "start", "max_frames", "direction" and "fps" that override the command
// line's options for that video. Blank lines and lines starting with '#' are ignored; relative paths
// are resolved against the manifest's folder (a manifest and its videos move together).
//
//   auto items = read_manifest("videos.txt");   // every item checked; ids unique
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace segmux::pipeline {

struct BatchItem {
  std::string id;                    // the output folder's name: DIR/<id>/
  std::string path;                  // video file, GIF or frame folder
  std::vector<std::string> prompts;  // empty: the command line's --prompt
  std::optional<int> start, max_frames;
  std::optional<std::string> direction;  // forward, backward or both
  std::optional<double> fps;             // a frame folder's frame rate
  int line = 0;                          // 1-based line of the manifest (for messages)
};

// Ids name folders on shared file systems: 1..kMaxBatchIdLength of [A-Za-z0-9._-], not starting with '.'
// (hidden names are the batch's own: .staging, .failed, .summary).
constexpr size_t kMaxBatchIdLength = 200;
bool valid_batch_id(const std::string& id);
// The id of a path-only line: the file name without its extension, characters outside the id set
// replaced by '_' (a folder's own name for a frame folder).
std::string batch_id_from_path(const std::string& path);

// Parses manifest text (`name` in messages, relative paths against `base_dir`). Errors name the line.
std::vector<BatchItem> parse_manifest(const std::string& text, const std::string& name, const std::string& base_dir);
// Reads and parses a manifest file.
std::vector<BatchItem> read_manifest(const std::string& path);

}  // namespace segmux::pipeline
