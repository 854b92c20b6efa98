#include "pipeline/model_store/model_store.h"

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
#include "io/files.h"
#include "io/json_limits.h"
#include "models/sam31/candidates.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/compiled_backend.h"
#include "runtime/offline_model.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

const char* kVersion = "segmux-0.1.0";

// The config and vocabulary recorded in a model folder's model.json.
void read_model_json(const std::string& dir, sam31::ModelConfig& cfg, std::string& vocab) {
  nlohmann::json meta = read_untrusted_json_file(dir + "/model.json");
  SEGMUX_CHECK(meta.is_object() && meta.contains("config") && meta["config"].is_object(), "'", dir,
               "/model.json' is not a segmux model description (no \"config\" object)");
  cfg = sam31::parse_config(meta["config"].dump(), dir + "/model.json");
  if (vocab.empty() && meta.contains("vocab") && meta["vocab"].is_string()) vocab = meta["vocab"].get<std::string>();
}

// The cache folder of a checkpoint, compiled into it on first use.
std::string cached_model_dir(const ModelSource& src, const sam31::ModelConfig& cfg, const std::string& vocab,
                             const LogFn& log) {
  struct stat st {};
  SEGMUX_CHECK(::stat(src.weights.c_str(), &st) == 0, "cannot read checkpoint '", src.weights, "'");
  const std::string cache = src.cache_dir.empty() ? default_cache_dir() : src.cache_dir;
  std::string key = fs::absolute(src.weights).string() + "|" + std::to_string(st.st_size) + "|" +
                    std::to_string(st.st_mtime) + "|" + sam31::config_to_json(cfg) + "|" + build_identity();
  if (src.precision != "fp32") key += "|" + src.precision;  // fp32 keeps the keys of earlier builds
  std::string dir = cache + "/" + cfg.name + "-" + std::to_string(cache_hash(key));
  ensure_model_dir(
      dir, [&](const std::string& tmp) { compile_model_dir(cfg, src.weights, vocab, tmp, log, src.precision); },
      "first use of this checkpoint: compiling the candidates into " + dir, log);
  return dir;
}

}  // namespace

void ensure_model_dir(const std::string& dir, const std::function<void(const std::string& tmp_dir)>& make,
                      const std::string& what, const LogFn& log) {
  if (fs::exists(dir + "/model.json")) {
    log("using compiled candidates cached in " + dir);
    return;
  }
  const fs::path parent = fs::path(dir).parent_path();
  fs::create_directories(parent);
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
  // lesser level, so each level has its own cache entries.
  std::string id = std::string(kVersion) + "|" + host_isa();
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return id;
  return id + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtime);
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
  SEGMUX_CHECK(precision == "fp32" || precision == "bf16", "unknown precision '", precision, "' (fp32 or bf16)");
  fs::create_directories(out_dir);
  log("loading weights " + weights_path);
  sam31::Weights w = sam31::Weights::load(weights_path);
  sam31::check_weights(w, cfg);
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    const sam31::Candidate& c = sam31::candidate(f.candidate);
    log("compiling " + f.file);
    compiler::CompileOptions opt;
    opt.command_line = "compiled on first use of " + weights_path + " (" + f.file + ")";
    opt.precision = precision;
    compiler::CompileResult r = compiler::compile_graph(c.build(cfg, w, f.variant), opt);
    compiler::write_compiled(out_dir + "/" + f.file + ".smx", r, opt);
  }
  nlohmann::json meta = {{"producer", kVersion},
                         {"config", nlohmann::json::parse(sam31::config_to_json(cfg))},
                         {"weights", fs::absolute(weights_path).string()},
                         {"precision", precision},
                         {"vocab", vocab_path.empty() ? "" : fs::absolute(vocab_path).string()}};
  std::string text = meta.dump(2);
  write_file_atomic(out_dir + "/model.json", text.data(), text.size());
}

OpenedModel open_model(const ModelSource& src, int num_frames, const LogFn& log) {
  OpenedModel m;
  std::string dir = src.model_dir, vocab = src.vocab;
  if (!src.weights.empty()) {
    m.config = src.config.empty() ? sam31::default_config() : sam31::load_config(src.config);
    if (vocab.empty()) vocab = sam31::Tokenizer::find_vocabulary(src.weights);
    dir = cached_model_dir(src, m.config, vocab, log);
    m.description = src.weights + " (compiled in " + dir + ")";
  } else {
    SEGMUX_CHECK(!dir.empty(), "no model given (a checkpoint or a model folder)");
    SEGMUX_CHECK(fs::exists(dir + "/model.json"), "'", dir, "' is not a model folder (no model.json)");
    read_model_json(dir, m.config, vocab);
    m.description = dir;
  }
  if (vocab.empty()) vocab = sam31::Tokenizer::find_vocabulary(dir);
  for (const sam31::CompiledFile& f : sam31::compiled_files())
    if (src.weights.empty())
      SEGMUX_CHECK(fs::exists(dir + "/" + f.file + ".smx"), "model folder '", dir, "' lacks ", f.file, ".smx");
  sam31::Tokenizer tok = sam31::Tokenizer::load(vocab, m.config.text_context_length);
  try {
    m.backend = open_compiled_backend(m.config, dir, tok, num_frames, src.num_threads);
  } catch (const Error& e) {
    if (src.weights.empty()) throw;  // a model folder the user gave: report, never delete
    // A cache entry of ours that no longer loads (a corrupted or truncated file): build it again.
    log(std::string("the cached model is damaged (") + e.what() + "): compiling it again");
    fs::remove_all(dir);
    dir = cached_model_dir(src, m.config, vocab, log);
    m.backend = open_compiled_backend(m.config, dir, tok, num_frames, src.num_threads);
  }
  m.model_dir = dir;
  return m;
}

}  // namespace segmux::pipeline
