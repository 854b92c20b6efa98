#include "deploy/model_store/model_store.h"

#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compiler/compile.h"
#include "core/error.h"
#include "deploy/model_store/cache.h"
#include "deploy/model_store/engine_backend.h"
#include "deploy/package/package.h"
#include "io/files.h"
#include "io/json_limits.h"
#include "io/paths.h"
#include "io/sha256.h"
#include "models/sam31/candidates.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/candidate_model.h"
#include "runtime/offline_model.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

// The cache folder of a checkpoint, compiled into it on first use. Keyed by the checkpoint's CONTENT
// (sha256, memoised per file version: cache.h), the config and this build.
std::string cached_model_dir(const ModelSource& src, const sam31::ModelConfig& cfg, const std::string& vocab,
                             const LogFn& log) {
  const std::string cache = src.cache_dir.empty() ? default_cache_dir() : src.cache_dir;
  const std::string content = checkpoint_content_hash(src.weights, cache, log);
  std::string key = content + "|" + sam31::config_to_json(cfg) + "|" + build_identity();
  // The ONNX Runtime engine's entries hold onnx/ and no .smx: nothing is compiled that it does not run.
  const bool ort = src.engine == "ort";
  if (ort)
    key += "|engine=ort";
  else if (src.precision != "fp32")
    key += "|" + src.precision;
  std::string dir = cache + "/" + cfg.name + "-" + sha256_hex(key.data(), key.size()).substr(0, 16);
  ensure_model_dir(
      dir,
      [&](const std::string& tmp) {
        package::PackageOptions opt;
        opt.checkpoint = src.weights;
        opt.checkpoint_sha256 = content;
        opt.vocab = vocab;
        opt.precisions = {src.precision};
        opt.route_files = false;
        opt.smx_files = !ort;
        opt.onnx_files = ort;
        // What `segmux deploy` would make of the same inputs (file names only; the cache keeps its runtime files).
        opt.command_line = "segmux deploy " + fs::path(src.weights).filename().string() +
                           (src.config.empty() ? "" : " --config " + fs::path(src.config).filename().string()) +
                           " -o " + fs::path(dir).filename().string() + " (runtime files, by the model cache)";
        package::build_package(cfg, opt, tmp, log);
        package::write_manifest(
            tmp, {{"checkpoint", {{"file", fs::path(src.weights).filename().string()}, {"sha256", content}}},
                  {"config", nlohmann::json::parse(sam31::config_to_json(cfg))},
                  {"build", build_identity()},
                  {"engine", src.engine},
                  {"cache_key", key}});
      },
      std::string("first use of this checkpoint: ") + (ort ? "exporting the ONNX" : "compiling the") +
          " candidates into " + dir,
      log);
  malloc_trim(0);  // a compile frees gigabytes in blocks glibc would keep: give them back before the model opens
  mark_used(dir);
  return dir;
}

// A package (a folder with manifest.json) is checked for missing and truncated files among those a run
// reads before it loads, so a damaged package is named clearly. Sizes only for the .smx engine (every
// .smx carries its own checksums; `segmux verify-package` checks all hashes); for ONNX Runtime also the
// sha256 of what it reads, since ONNX files carry no checksums (~3.5 s of CPU per GiB).
void check_package(const std::string& dir, const std::string& engine) {
  if (!fs::exists(dir + "/" + package::kManifestFile)) return;  // a model folder made before packages
  const bool ort = engine == "ort";
  const package::ManifestCheck c =
      package::check_manifest(dir, ort, ort ? package::ort_runtime_file : package::runtime_file);
  if (c.ok()) return;
  std::string all;
  for (const std::string& p : c.problems) all += (all.empty() ? "" : "; ") + p;
  fail("package '", dir, "' is damaged: ", all, " (segmux verify-package checks it in full)");
}

}  // namespace

void ensure_model_dir(const std::string& dir, const std::function<void(const std::string& tmp_dir)>& make,
                      const std::string& what, const LogFn& log) {
  if (fs::exists(dir + "/model.json")) {
    log("using compiled candidates cached in " + dir);
    return;
  }
  const fs::path parent = fs::path(dir).parent_path();
  make_directories(parent.string());
  remove_abandoned_partials(parent.string(), ".partial-");
  log(what);
  const std::string tmp = dir + ".partial-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  try {
    make(tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);  // an entry without model.json is unfinished: never used
  fs::rename(tmp, dir, ec);
  if (ec) {  // another process finished the same entry first: use it
    fs::remove_all(tmp, ec);
    SEGMUX_CHECK(fs::exists(dir + "/model.json"), "cannot move the compiled model into '", dir, "'");
  }
}

std::string default_cache_dir() {
  const char* x = std::getenv("XDG_CACHE_HOME");
  if (x && *x) return std::string(x) + "/segmux";
  const char* h = std::getenv("HOME");
  return std::string(h && *h ? h : "/tmp") + "/.cache/segmux";
}

std::string build_identity() {
  // The ISA the kernels run at (SEGMUX_ISA included): a model compiled for AVX-512 does not load on a
  // lesser level, so each level has its own cache entries. Then the hash of the code that makes
  // compiled models (cache.h): the same for the segmux command and libsegmux, and for every rebuild of
  // the same code, so they all share one entry, while a change of that code gets a new one.
  return std::string(package::kVersion) + "|" + host_isa() + "|code=" + compiled_code_hash();
}

uint64_t cache_hash(const std::string& key) {  // FNV-1a, folded to 9-10 decimal digits
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h % 1000000007ull;
}

void compile_model_dir(const sam31::ModelConfig& cfg, const std::string& weights_path, const std::string& vocab_path,
                       const std::string& out_dir, const LogFn& log, const std::string& precision) {
  package::PackageOptions opt;
  opt.checkpoint = weights_path;
  opt.vocab = vocab_path;
  opt.precisions = {precision};
  opt.route_files = false;
  opt.command_line = "segmux deploy " + fs::path(weights_path).filename().string() + " -o " +
                     fs::path(out_dir).filename().string() + " (runtime files)";
  const package::BuildRecord rec = package::build_package(cfg, opt, out_dir, log);
  package::write_manifest(
      out_dir,
      {{"checkpoint", {{"file", fs::path(weights_path).filename().string()}, {"sha256", rec.checkpoint_sha256}}},
       {"config", nlohmann::json::parse(sam31::config_to_json(cfg))}});
}

OpenedModel open_model(const ModelSource& src, const LogFn& log) {
  OpenedModel m;
  require_engine(src.engine);  // before anything is compiled (and never taken for a damaged cache entry)
  std::string dir = src.model_dir, vocab = src.vocab;
  if (!src.weights.empty()) {
    std::error_code ec;  // before the vocabulary beside it is looked for: name the missing file itself
    SEGMUX_CHECK(fs::exists(src.weights, ec), "checkpoint '", src.weights, "' does not exist");
    m.config = src.config.empty() ? sam31::default_config() : src.read_config(src.config);
    if (vocab.empty()) vocab = sam31::Tokenizer::find_vocabulary(src.weights);
    dir = cached_model_dir(src, m.config, vocab, log);
    m.description = src.weights + " (compiled in " + dir + ")";
  } else {
    SEGMUX_CHECK(!dir.empty(), "no model given (a checkpoint or a model folder)");
    SEGMUX_CHECK(fs::exists(dir + "/model.json"), "'", dir, "' is not a model folder (no model.json)");
    package::read_model_json(dir, m.config, vocab);
    check_package(dir, src.engine);
    m.description = dir;
  }
  if (vocab.empty()) vocab = sam31::Tokenizer::find_vocabulary(dir);
  for (const sam31::CompiledFile& f : sam31::compiled_files())
    if (src.weights.empty() && src.engine == "smx")
      SEGMUX_CHECK(fs::exists(dir + "/" + f.file + ".smx"), "model folder '", dir, "' lacks ", f.file, ".smx");
  sam31::Tokenizer tok = sam31::Tokenizer::load(vocab, m.config.text_context_length);
  try {
    m.model = open_engine_model(src, m.config, dir, tok, log);
  } catch (const Error& e) {
    if (src.weights.empty()) throw;  // a model folder the user gave: report, never delete
    // A cache entry of ours that no longer loads (a corrupted or truncated file): build it again.
    log(std::string("the cached model is damaged (") + e.what() + "): compiling it again");
    fs::remove_all(dir);
    dir = cached_model_dir(src, m.config, vocab, log);
    m.model = open_engine_model(src, m.config, dir, tok, log);
  }
  m.model_dir = dir;
  return m;
}

}  // namespace segmux::pipeline
