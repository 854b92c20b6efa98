#include "pipeline/backends/smx_runner.h"

#include <malloc.h>

#include "core/mapped_pages.h"
#include "runtime/offline_model.h"

namespace segmux::pipeline {

namespace {

class SmxRunner : public CandidateRunner {
 public:
  SmxRunner(const std::string& path, ExecutorOptions options, const LoadOptions& load)
      : model_(load_offline_model_file(path, load)), options_(std::move(options)) {}

  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& in) override {
    if (!executor_) executor_ = std::make_unique<Executor>(model_.graph, model_.plan, options_);
    return wanted_.empty() ? executor_->run(in) : executor_->run(in, wanted_);
  }

  void set_wanted_outputs(std::vector<std::string> names) override { wanted_ = std::move(names); }
  bool has_output(const std::string& name) const override {
    for (int id : model_.graph.outputs)
      if (id >= 0 && model_.graph.value(id).name == name) return true;
    return false;
  }

  void release() override {
    if (!executor_) return;
    executor_.reset();
    // Weights the kernels read in place leave the resident set (mapped again from the page cache when
    // needed), and the heap the prepacked copies occupied goes back to the system: glibc keeps freed
    // blocks below its mmap threshold otherwise.
    for (const auto& [id, t] : model_.graph.initializers) release_mapped_pages(t.raw(), t.nbytes());
    malloc_trim(0);
  }

 private:
  OfflineModel model_;
  ExecutorOptions options_;
  std::unique_ptr<Executor> executor_;
  std::vector<std::string> wanted_;
};

}  // namespace

std::unique_ptr<CandidateRunner> open_smx_runner(const std::string& path, const ExecutorOptions& options,
                                                 const LoadOptions& load) {
  return std::make_unique<SmxRunner>(path, options, load);
}

}  // namespace segmux::pipeline
