// manifest.json: the package's integrity record, and the check `segmux verify-package` runs before
// anything in the folder is trusted.
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "deploy/package/package.h"
#include "io/files.h"
#include "io/json_limits.h"
#include "io/printable.h"
#include "io/sha256.h"

namespace segmux::package {

namespace fs = std::filesystem;

namespace {

// An entry of the package that is neither a regular file nor a folder: its path and the problem.
struct BadEntry {
  std::string rel, problem;
};

// Every entry under `dir`, relative, sorted; `bad` gets what is neither a regular file nor a folder.
// `dir` itself may be a link to the package folder; links inside it are never followed.
std::map<std::string, uint64_t> walk(const std::string& dir, std::vector<BadEntry>* bad) {
  std::map<std::string, uint64_t> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const fs::file_status st = it->symlink_status();
    const std::string rel = it->path().lexically_relative(dir).generic_string();  // links not followed
    if (fs::is_symlink(st)) {
      if (bad)
        bad->push_back({rel, "'" + printable(rel) + "' is a symbolic link (a package holds regular files only)"});
      it.disable_recursion_pending();
    } else if (fs::is_regular_file(st)) {
      files[rel] = uint64_t(it->file_size());
    } else if (!fs::is_directory(st)) {
      if (bad) bad->push_back({rel, "'" + printable(rel) + "' is not a regular file"});
    }
  }
  return files;
}

// The bad entries a check restricted to the files `only` selects must still report: those it selects
// and the links to folders holding them (a run reads through those as well).
std::vector<std::string> bad_entries_read(const std::vector<BadEntry>& bad, const nlohmann::json& files,
                                          const std::function<bool(const std::string&)>& only) {
  std::vector<std::string> out;
  for (const BadEntry& b : bad) {
    bool read = !only || only(b.rel);
    for (const auto& f : files) {
      if (read) break;
      if (!f.is_object() || !f.contains("path") || !f["path"].is_string()) continue;
      const std::string& rel = f["path"].get_ref<const std::string&>();
      read = only(rel) && rel.rfind(b.rel + "/", 0) == 0;
    }
    if (read) out.push_back(b.problem);
  }
  return out;
}

// A manifest path must name a file inside the package: relative, no "..", ".", or empty parts.
bool safe_relative(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.find('\\') != std::string::npos || p.find('\0') != std::string::npos)
    return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    const std::string part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

void write_manifest(const std::string& dir, const nlohmann::json& info) {
  nlohmann::json m = info;
  m["format"] = kPackageFormat;
  m["segmux_version"] = kVersion;
  nlohmann::json files = nlohmann::json::array();
  std::vector<BadEntry> bad;
  for (const auto& [rel, size] : walk(dir, &bad)) {
    if (rel == kManifestFile) continue;
    uint64_t bytes = 0;
    const std::string hash = sha256_file(dir + "/" + rel, &bytes);
    files.push_back({{"path", rel}, {"size", bytes}, {"sha256", hash}});
  }
  SEGMUX_CHECK(bad.empty(), "cannot write the manifest of '", dir, "': ", bad.front().problem);
  m["files"] = files;
  const std::string text = m.dump(2);
  write_file_atomic(dir + "/" + kManifestFile, text.data(), text.size());
}

nlohmann::json read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestFile;
  SEGMUX_CHECK(fs::is_regular_file(fs::symlink_status(path)), "'", dir, "' is not a segmux package (no ", kManifestFile,
               ")");
  nlohmann::json m = read_untrusted_json_file(path);
  SEGMUX_CHECK(m.is_object() && m.contains("format") && m["format"] == kPackageFormat && m.contains("files") &&
                   m["files"].is_array(),
               "'", path, "' is not a segmux package manifest (format ", kPackageFormat, ")");
  // The fields readers take with json::value(), which throws a library error on another type.
  for (const char* key : {"segmux_version", "command_line", "verification", "verification_reference"})
    SEGMUX_CHECK(!m.contains(key) || m[key].is_string(), "'", path, "': \"", key, "\" is not a string");
  SEGMUX_CHECK(!m.contains("verification_seed") || m["verification_seed"].is_number_unsigned(), "'", path,
               "': \"verification_seed\" is not a non-negative integer");
  for (const char* key : {"checkpoint", "config"})
    SEGMUX_CHECK(!m.contains(key) || m[key].is_object(), "'", path, "': \"", key, "\" is not an object");
  return m;
}

ManifestCheck check_manifest(const std::string& dir, bool hashes, const std::function<bool(const std::string&)>& only) {
  ManifestCheck r;
  // The package folder may be reached through a link (a deployment's "current" link, say).
  SEGMUX_CHECK(fs::is_directory(fs::status(dir)), "'", dir, "' is not a folder");
  const nlohmann::json m = read_manifest(dir);
  std::vector<BadEntry> unsafe;
  std::map<std::string, uint64_t> present = walk(dir, &unsafe);
  // A link among the files a run reads is refused there too: a run followed one to a modified ONNX file.
  r.problems = bad_entries_read(unsafe, m["files"], only);
  std::set<std::string> listed = {kManifestFile};
  for (const auto& f : m["files"]) {
    const bool well_formed = f.is_object() && f.contains("path") && f["path"].is_string() && f.contains("size") &&
                             f["size"].is_number_unsigned() && f.contains("sha256") && f["sha256"].is_string();
    if (!well_formed) {
      r.problems.push_back("manifest entry " + printable(f.dump(), 120) + " is malformed (path, size, sha256)");
      continue;
    }
    const std::string rel = f["path"].get<std::string>();
    if (!safe_relative(rel)) {
      r.problems.push_back("manifest path '" + printable(rel) + "' is not a plain relative path inside the package");
      continue;
    }
    listed.insert(rel);
    if (only && !only(rel)) continue;
    auto it = present.find(rel);
    if (it == present.end()) {
      if (!fs::exists(fs::symlink_status(dir + "/" + rel))) r.problems.push_back("'" + printable(rel) + "' is missing");
      continue;  // else: a link or special file, already reported
    }
    const uint64_t want = f["size"].get<uint64_t>();
    if (it->second != want) {
      r.problems.push_back("'" + printable(rel) + "' has " + std::to_string(it->second) + " bytes, the manifest says " +
                           std::to_string(want) + (it->second < want ? " (truncated)" : " (grown)"));
      continue;
    }
    ++r.files_checked;
    r.bytes_checked += want;
    if (hashes && sha256_file(dir + "/" + rel) != f["sha256"].get<std::string>())
      r.problems.push_back("'" + printable(rel) + "' does not match its sha256 in the manifest (modified)");
  }
  for (const auto& [rel, size] : present)
    if (!only && !listed.count(rel)) r.problems.push_back("'" + printable(rel) + "' is not listed in the manifest");
  return r;
}

}  // namespace segmux::package
