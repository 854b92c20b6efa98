#include "pipeline/backends/ort_backend.h"

#include <filesystem>

#include "core/error.h"
#include "engines/ort/ort_model.h"
#include "pipeline/backends/candidate_model.h"

namespace segmux::pipeline {

namespace {

class OrtRunner : public CandidateRunner {
 public:
  OrtRunner(const std::string& path, int threads) : model_(path, OrtModelOptions{threads, true, false}) {}
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& in) override { return model_.run(in); }

 private:
  OrtModel model_;
};

}  // namespace

bool is_known_engine(const std::string& engine) { return engine == "smx" || engine == "ort"; }

bool engine_available(const std::string& engine, std::string* why) {
  if (engine == "smx") return true;
  std::string reason = "unknown engine (known: smx, ort)";
  if (engine == "ort" && ort_available(&reason)) return true;
  if (why) *why = "engine \"" + engine + "\" is not available: " + reason;
  return false;
}

std::string onnx_candidate_path(const std::string& model_dir, const std::string& file) {
  return model_dir + "/onnx/" + file + ".onnx";
}

std::shared_ptr<Model> open_ort_model(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                      sam31::Tokenizer tokenizer, int num_threads) {
  std::string why;
  SEGMUX_CHECK(engine_available("ort", &why), why);
  // By value: the model keeps the factory for candidates it loads later (point prompts).
  auto open = [model_dir, num_threads](const sam31::CompiledFile& f) -> std::unique_ptr<CandidateRunner> {
    const std::string path = onnx_candidate_path(model_dir, f.file);
    SEGMUX_CHECK(std::filesystem::exists(path), "model folder '", model_dir, "' lacks onnx/", f.file,
                 ".onnx (the ONNX Runtime engine runs the ONNX files of a package: segmux deploy)");
    try {
      return std::make_unique<OrtRunner>(path, num_threads);
    } catch (const Error& e) {
      fail("'", path, "': ", e.what());
    }
  };
  return open_candidate_model(cfg, open, std::move(tokenizer));
}

}  // namespace segmux::pipeline
