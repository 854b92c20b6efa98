// One deployment candidate as the model glue sees it: named tensors in, named tensors out. The glue
// (tracker memory bank, multiplex buckets, demux) is the same whatever engine runs the candidates:
// our runtime on the .smx files (candidate_model.h) or ONNX Runtime on the ONNX files (ort_backend.h).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/candidates.h"

namespace segmux::pipeline {

class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  // Inputs by name; returns every output by name (or those of set_wanted_outputs). Errors are segmux::Error.
  virtual std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) = 0;
  // The caller reads only these outputs (empty: all). An engine that can leave the others out of the
  // result does (our runtime then copies nothing else out of its arena); the default returns them all.
  virtual void set_wanted_outputs(std::vector<std::string> /*names*/) {}
  // Whether the candidate has this output (a package compiled before an output was added lacks it).
  // Default: yes (a runner that cannot tell returns every output it has anyway).
  virtual bool has_output(const std::string& /*name*/) const { return true; }
  // The caller will not run this candidate for a while: drop what the next run() can make again (our
  // runtime: the kernels and their prepacked weights, while the verified file stays mapped). Default: nothing.
  virtual void release() {}
};

// Opens the runner of one compiled file of the model folder (error naming the file at fault).
using CandidateRunnerFactory = std::function<std::unique_ptr<CandidateRunner>(const sam31::CompiledFile& file)>;

}  // namespace segmux::pipeline
