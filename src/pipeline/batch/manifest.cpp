#include "pipeline/batch/manifest.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/json_limits.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

template <typename T>
T get_field(const nlohmann::json& j, const char* key, const std::string& where, const char* kind) {
  const auto& v = j.at(key);
  const bool ok = std::is_same_v<T, std::string> ? v.is_string()
                  : std::is_same_v<T, double>    ? v.is_number()
                                                 : v.is_number_integer();
  if (!ok) fail(where, ": \"", key, "\" must be ", kind, ", got ", describe_json(v));
  if constexpr (std::is_same_v<T, int>) {  // a count or a frame index: no silent wrap of 1e12
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<int>::max())
                                             : v.get<int64_t>() >= std::numeric_limits<int>::min() &&
                                                   v.get<int64_t>() <= std::numeric_limits<int>::max();
    if (!fits) fail(where, ": \"", key, "\" ", v.dump(), " is out of range");
  }
  return v.get<T>();
}

// A JSON line: {"path": ..., "id": ..., "prompts": [...], "start": N, ...}.
BatchItem parse_json_line(const std::string& text, const std::string& where) {
  const nlohmann::json j = parse_untrusted_json(text, where, {.max_depth = 4});
  SEGMUX_CHECK(j.is_object(), where, ": a JSON line must be an object with a \"path\"");
  static const char* known[] = {"id", "path", "prompts", "prompt", "start", "max_frames", "direction", "fps"};
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    SEGMUX_CHECK(ok, where, ": unknown key \"", key,
                 "\" (known: id, path, prompts, prompt, start, max_frames, direction, fps)");
  }
  SEGMUX_CHECK(j.contains("path"), where, ": no \"path\"");
  BatchItem item;
  item.path = get_field<std::string>(j, "path", where, "a string");
  item.id = j.contains("id") ? get_field<std::string>(j, "id", where, "a string") : batch_id_from_path(item.path);
  SEGMUX_CHECK(!(j.contains("prompt") && j.contains("prompts")), where, ": give \"prompt\" or \"prompts\", not both");
  if (j.contains("prompt")) item.prompts = {get_field<std::string>(j, "prompt", where, "a string")};
  if (j.contains("prompts")) {
    SEGMUX_CHECK(j["prompts"].is_array() && !j["prompts"].empty(), where,
                 ": \"prompts\" must be a non-empty list of strings");
    for (const auto& p : j["prompts"]) {
      SEGMUX_CHECK(p.is_string(), where, ": \"prompts\" must be a list of strings, got ", describe_json(p));
      item.prompts.push_back(p.get<std::string>());
    }
  }
  for (const auto& p : item.prompts) SEGMUX_CHECK(!p.empty(), where, ": a prompt is empty");
  if (j.contains("start")) item.start = get_field<int>(j, "start", where, "a whole number");
  if (j.contains("max_frames")) item.max_frames = get_field<int>(j, "max_frames", where, "a whole number");
  if (j.contains("direction")) item.direction = get_field<std::string>(j, "direction", where, "a string");
  if (j.contains("fps")) item.fps = get_field<double>(j, "fps", where, "a number");
  SEGMUX_CHECK(!item.start || *item.start >= 0, where, ": \"start\" ", item.start.value_or(0), " is negative");
  SEGMUX_CHECK(!item.max_frames || *item.max_frames >= 1, where, ": \"max_frames\" ", item.max_frames.value_or(0),
               " must be at least 1");
  SEGMUX_CHECK(
      !item.direction || *item.direction == "forward" || *item.direction == "backward" || *item.direction == "both",
      where, ": \"direction\" must be forward, backward or both, got \"", item.direction.value_or(""), "\"");
  SEGMUX_CHECK(!item.fps || *item.fps > 0, where, ": \"fps\" must be positive");
  return item;
}

}  // namespace

bool valid_batch_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxBatchIdLength || id[0] == '.') return false;
  for (char c : id)
    if (!id_char(c)) return false;
  return true;
}

std::string batch_id_from_path(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // "frames/" -> "frames"
  std::string id = fs::is_directory(p) ? p.filename().string() : p.stem().string();
  for (char& c : id)
    if (!id_char(c)) c = '_';
  if (!id.empty() && id[0] == '.') id[0] = '_';
  return id;
}

std::vector<BatchItem> parse_manifest(const std::string& text, const std::string& name, const std::string& base_dir) {
  std::vector<BatchItem> items;
  std::map<std::string, int> line_of_id;
  std::istringstream in(text);
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    const std::string s = trimmed(raw);
    if (s.empty() || s[0] == '#') continue;
    const std::string where = name + " line " + std::to_string(line);
    BatchItem item;
    if (s[0] == '{') {
      item = parse_json_line(s, where);
    } else {
      item.path = s;
      item.id = batch_id_from_path(s);
    }
    SEGMUX_CHECK(!item.path.empty(), where, ": the path is empty");
    if (fs::path(item.path).is_relative() && !base_dir.empty()) item.path = (fs::path(base_dir) / item.path).string();
    SEGMUX_CHECK(valid_batch_id(item.id), where, ": the id \"", item.id, "\" cannot name an output folder (1 to ",
                 kMaxBatchIdLength, " of the characters A-Z a-z 0-9 . _ -, not starting with '.')");
    item.line = line;
    const auto [it, fresh] = line_of_id.emplace(item.id, line);
    SEGMUX_CHECK(fresh, where, ": the id \"", item.id, "\" is also the id of line ", it->second,
                 " (give each video its own id: a JSON line {\"id\": ..., \"path\": ...})");
    items.push_back(std::move(item));
  }
  SEGMUX_CHECK(!items.empty(), name, ": the manifest lists no video");
  return items;
}

std::vector<BatchItem> read_manifest(const std::string& path) {
  std::error_code ec;
  SEGMUX_CHECK(fs::is_regular_file(path, ec), "manifest '", path, "' is not a readable file");
  std::ifstream in(path, std::ios::binary);
  SEGMUX_CHECK(in.good(), "cannot open the manifest '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  SEGMUX_CHECK(!in.bad(), "cannot read the manifest '", path, "'");
  return parse_manifest(text.str(), path, fs::path(path).parent_path().string());
}

}  // namespace segmux::pipeline
