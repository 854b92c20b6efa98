// One deployment candidate as the backend glue sees it: named tensors in, named tensors out. The glue
// (tracker memory bank, multiplex buckets, demux) is the same whatever engine runs the candidates:
// our runtime on the .smx files (compiled_backend.h) or ONNX Runtime on the ONNX files (ort_backend.h).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "models/sam31/candidates.h"

namespace segmux::pipeline {

class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  // Inputs by name; returns every output by name. Errors are segmux::Error.
  virtual std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) = 0;
};

// Opens the runner of one compiled file of the model folder (error naming the file at fault).
using CandidateRunnerFactory = std::function<std::unique_ptr<CandidateRunner>(const sam31::CompiledFile& file)>;

}  // namespace segmux::pipeline
