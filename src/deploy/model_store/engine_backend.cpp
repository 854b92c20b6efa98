#include "deploy/model_store/engine_backend.h"

#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "deploy/model_store/cache.h"
#include "io/files.h"
#include "io/paths.h"
#include "models/sam31/candidates.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/weights.h"
#include "onnx/onnx_io.h"
#include "pipeline/backends/candidate_model.h"
#include "pipeline/backends/ort_backend.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

void require_engine(const std::string& engine) {
  SEGMUX_CHECK(is_known_engine(engine), "unknown engine '", engine, "' (known: smx, ort)");
  std::string why;
  SEGMUX_CHECK(engine_available(engine, &why), why);
}

void ensure_onnx_candidates(const sam31::ModelConfig& cfg, const std::string& weights_path, const std::string& dir,
                            const LogFn& log) {
  bool complete = true;
  for (const sam31::CompiledFile& f : sam31::compiled_files())
    complete = complete && fs::exists(onnx_candidate_path(dir, f.file));
  if (complete) return;
  remove_abandoned_partials(dir, ".partial-");
  const std::string final_dir = dir + "/onnx", tmp = dir + "/onnx.partial-" + std::to_string(::getpid());
  log("first use of the ONNX Runtime engine with this checkpoint: exporting the ONNX candidates into " + final_dir);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    make_directories(tmp);
    sam31::Weights w = sam31::Weights::load(weights_path);
    sam31::check_weights(w, cfg);
    for (const sam31::CompiledFile& f : sam31::compiled_files()) {
      log("exporting " + f.file + ".onnx");
      onnx_io::export_onnx_file(sam31::candidate(f.candidate).build(cfg, w, f.variant), tmp + "/" + f.file + ".onnx");
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(final_dir, ec);  // an incomplete onnx/ folder (files removed by hand): replaced
  fs::rename(tmp, final_dir, ec);
  if (ec) {  // another process finished first: use its files
    fs::remove_all(tmp, ec);
    SEGMUX_CHECK(fs::exists(final_dir), "cannot move the exported ONNX candidates into '", final_dir, "'");
  }
}

std::shared_ptr<Model> open_engine_model(const ModelSource& src, const sam31::ModelConfig& cfg, const std::string& dir,
                                         sam31::Tokenizer tok, const LogFn& log) {
  require_engine(src.engine);
  if (src.engine == "smx")
    return open_smx_model(cfg, dir, std::move(tok), src.num_threads,
                          verified_memo_dir(src.cache_dir.empty() ? default_cache_dir() : src.cache_dir));
  if (!src.weights.empty()) ensure_onnx_candidates(cfg, src.weights, dir, log);
  return open_ort_model(cfg, dir, std::move(tok), src.num_threads);
}

}  // namespace segmux::pipeline
