#include "pipeline/model_store/model_store.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compiler/compile.h"
#include "core/error.h"
#include "io/files.h"
#include "models/sam31/candidates.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/compiled_backend.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

const char* kVersion = "segmux-0.1.0";

// The config and vocabulary recorded in a model folder's model.json.
void read_model_json(const std::string& dir, sam31::ModelConfig& cfg, std::string& vocab) {
  std::ifstream in(dir + "/model.json");
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  SEGMUX_CHECK(!meta.is_discarded() && meta.is_object() && meta.contains("config"), "'", dir,
               "/model.json' is not valid");
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
  std::string dir = cache + "/" + cfg.name + "-" + std::to_string(cache_hash(key));
  if (!fs::exists(dir + "/model.json")) {
    log("first use of this checkpoint: compiling the candidates into " + dir);
    compile_model_dir(cfg, src.weights, vocab, dir, log);
  } else {
    log("using compiled candidates cached in " + dir);
  }
  return dir;
}

}  // namespace

std::string default_cache_dir() {
  const char* x = std::getenv("XDG_CACHE_HOME");
  if (x && *x) return std::string(x) + "/segmux";
  const char* h = std::getenv("HOME");
  return std::string(h && *h ? h : "/tmp") + "/.cache/segmux";
}

std::string build_identity() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return kVersion;
  return std::string(kVersion) + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtime);
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
                       const std::string& out_dir, const LogFn& log) {
  fs::create_directories(out_dir);
  log("loading weights " + weights_path);
  sam31::Weights w = sam31::Weights::load(weights_path);
  sam31::check_weights(w, cfg);
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    const sam31::Candidate& c = sam31::candidate(f.candidate);
    log("compiling " + f.file);
    compiler::CompileOptions opt;
    opt.command_line = "compiled on first use of " + weights_path + " (" + f.file + ")";
    compiler::CompileResult r = compiler::compile_graph(c.build(cfg, w, f.variant), opt);
    compiler::write_compiled(out_dir + "/" + f.file + ".smx", r, opt);
  }
  nlohmann::json meta = {{"producer", kVersion},
                         {"config", nlohmann::json::parse(sam31::config_to_json(cfg))},
                         {"weights", fs::absolute(weights_path).string()},
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
    SEGMUX_CHECK(fs::exists(dir + "/" + f.file + ".smx"), "model folder '", dir, "' lacks ", f.file, ".smx");
  sam31::Tokenizer tok = sam31::Tokenizer::load(vocab, m.config.text_context_length);
  m.backend = open_compiled_backend(m.config, dir, std::move(tok), num_frames, src.num_threads);
  m.model_dir = dir;
  return m;
}

}  // namespace segmux::pipeline
