// One compiled file (.smx) on our runtime, as the backend glue runs it. The file is mapped and its
// checksums verified when the runner is opened (a damaged file is an error at open); the executor
// (kernels, prepacked weights, arena views) is made on the first run(), so a start-up reads the files
// and nothing more, and candidates a run never calls (point prompts...) cost no memory. release()
// drops the executor again (made anew by the next run) and gives its memory back to the system.
#pragma once
#include <memory>
#include <string>

#include "pipeline/backends/candidate_runner.h"
#include "runtime/executor.h"
#include "runtime/offline_model.h"

namespace segmux::pipeline {

std::unique_ptr<CandidateRunner> open_smx_runner(const std::string& path, const ExecutorOptions& options,
                                                 const LoadOptions& load = {});

}  // namespace segmux::pipeline
