// libFuzzer target: a deployment package's manifest.json and the folder checks `verify-package` and
// `track --model PKG` run before trusting anything in it (deploy/package/manifest.cpp). The input is
// the manifest text, then optionally "\n%%\n" and a folder layout, one entry a line:
//   f PATH CONTENT   a regular file        d PATH   a folder
//   l PATH           a symbolic link to a file outside the package, L PATH: to a folder outside
//   p PATH           a named pipe (must never be opened: a check would hang)
// (paths: [A-Za-z0-9._-] parts, no "." or ".."; the fuzzer never writes outside its temporary folder).
// Any input gives problems or a segmux::Error naming the manifest, never a crash, hang or library
// exception; every problem is valid UTF-8 of bounded length; and for a folder of regular files only,
// the manifest write_manifest writes checks clean.
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "core/error.h"
#include "deploy/package/package.h"
#include "io/files.h"
#include "io/printable.h"
#include "io_seeds.h"

namespace fs = std::filesystem;
namespace pkg = segmux::package;

namespace {

// Never destroyed: the exit handler that removes it runs after static destructors would have.
const fs::path& root() {
  static const fs::path* r = [] {
    auto* p = new fs::path(fs::temp_directory_path() / ("segmux_fuzz_manifest_" + std::to_string(::getpid())));
    fs::remove_all(*p);
    fs::create_directories(*p / "outside_dir");
    segmux::write_file_atomic((*p / "outside").string(), "secret", 6);
    return p;
  }();
  static const bool cleanup = std::atexit([] {
                                std::error_code ec;
                                fs::remove_all(*r, ec);
                              }) == 0;
  (void)cleanup;
  return *r;
}

bool safe_path(const std::string& p) {
  if (p.empty() || p.size() > 64 || p.front() == '/' || p.back() == '/') return false;
  int depth = 0;
  std::stringstream parts(p);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty() || part == "." || part == ".." || ++depth > 4) return false;
    for (char c : part)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// Builds the package folder from the layout; returns whether it holds regular files and folders only.
bool build_folder(const fs::path& dir, const std::string& manifest, const std::string& layout) {
  // The checks never change the folder and write_manifest only manifest.json, so a layout built for
  // the previous input is reused (mutations of the manifest alone run several times faster).
  static std::string last_layout;
  static bool last_plain = false, built = false;
  if (built && layout == last_layout) {
    segmux::write_file_atomic((dir / "manifest.json").string(), manifest.data(), manifest.size());
    return last_plain;
  }
  built = false;
  fs::remove_all(dir);
  fs::create_directories(dir);
  segmux::write_file_atomic((dir / "manifest.json").string(), manifest.data(), manifest.size());
  bool plain = true;
  std::stringstream lines(layout);
  std::string line;
  for (int n = 0; std::getline(lines, line) && n < 32; ++n) {
    if (line.size() < 3 || line[1] != ' ') continue;
    const size_t sp = line.find(' ', 2);
    const std::string path = line.substr(2, sp == std::string::npos ? std::string::npos : sp - 2);
    const std::string content = sp == std::string::npos ? "" : line.substr(sp + 1, 256);
    if (!safe_path(path) || path == "manifest.json") continue;
    const fs::path p = dir / path;
    bool through_link = false;  // never write through a link made earlier (outside the package)
    for (fs::path q = p.parent_path(); q != dir && q.has_relative_path(); q = q.parent_path())
      through_link |= fs::is_symlink(fs::symlink_status(q));
    if (through_link) continue;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec || fs::exists(fs::symlink_status(p))) continue;
    const char kind = line[0];
    if (kind == 'f') segmux::write_file_atomic(p.string(), content.data(), content.size());
    if (kind == 'd') fs::create_directory(p, ec);
    if (kind == 'l') fs::create_symlink(root() / "outside", p, ec);
    if (kind == 'L') fs::create_directory_symlink(root() / "outside_dir", p, ec);
    if (kind == 'p') ::mkfifo(p.c_str(), 0600);
    plain = plain && kind != 'l' && kind != 'L' && kind != 'p';
  }
  last_layout = layout;
  last_plain = plain;
  built = true;
  return plain;
}

void check_problems(const pkg::ManifestCheck& c) {
  for (const std::string& p : c.problems)
    if (p.empty() || p.size() > 1000 || !segmux::is_valid_utf8(p)) __builtin_trap();
}

std::string layout_of_seed() {
  return "f model.json {\"config\": {}}\nf backbone.smx SMX0\nf tokenizer/vocab.txt.gz v\nf onnx/backbone.onnx o\n"
         "f onnx/backbone.onnx.data dd\nf onnx/backbone.slim.onnx s\nf compiled/bf16-generic/backbone.smx b\n"
         "d empty\n";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    const fs::path dir = root() / "seed";
    const std::string layout = layout_of_seed();
    build_folder(dir, "", layout);
    fs::remove(dir / "manifest.json");
    pkg::write_manifest(dir.string(), {{"checkpoint", {{"file", "w.pt"}, {"size", 9}, {"sha256", "00"}}},
                                       {"verification", "review"},
                                       {"verification_seed", 20260327}});
    const std::string good = [&] {
      auto st = segmux::map_file((dir / "manifest.json").string());
      return std::string(reinterpret_cast<const char*>(st->data), st->nbytes);
    }();
    const std::string sep = "\n%%\n";
    std::string tampered = layout;
    tampered.replace(tampered.find("SMX0"), 4, "SMX1");
    return std::vector<std::string>{
        good + sep + layout,
        good + sep + tampered + "f extra.txt x\n",
        good + sep + layout + "l tokenizer/link\nL onnx/linkdir\np onnx/pipe\n",
        good,  // every file missing
        R"({"format": "segmux-package-1", "files": [{"path": "../x", "size": 1, "sha256": "a"},
            {"path": "/etc/passwd", "size": 0, "sha256": ""}, {"path": "a//b", "size": 1, "sha256": "a"},
            {"path": "model.json", "size": -1, "sha256": 3}, 7]})" +
            sep + layout,
        R"({"format": 1, "files": []})",
        R"({"format": "segmux-package-1", "files": [], "verification_seed": "x", "checkpoint": [1]})",
    };
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t sep = text.find("\n%%\n");
  const std::string manifest = text.substr(0, sep);
  const std::string layout = sep == std::string::npos ? "" : text.substr(sep + 4);
  const fs::path dir = root() / "pkg";
  const bool plain = build_folder(dir, manifest, layout);
  try {
    pkg::read_manifest(dir.string());
  } catch (const segmux::Error&) {
  }
  for (int mode = 0; mode < 3; ++mode) {
    try {
      check_problems(mode == 0   ? pkg::check_manifest(dir.string())
                     : mode == 1 ? pkg::check_manifest(dir.string(), false, pkg::runtime_file)
                                 : pkg::check_manifest(dir.string(), true, pkg::ort_runtime_file));
    } catch (const segmux::Error& e) {
      if (!segmux::is_valid_utf8(e.what())) __builtin_trap();
    }
  }
  if (plain) {  // what deploy does: the manifest it writes must check clean, in every mode
    pkg::write_manifest(dir.string(), {{"verification", "pass"}});
    if (!pkg::check_manifest(dir.string()).ok() || !pkg::check_manifest(dir.string(), false, pkg::runtime_file).ok() ||
        !pkg::check_manifest(dir.string(), true, pkg::ort_runtime_file).ok())
      __builtin_trap();
  }
  return 0;
}
