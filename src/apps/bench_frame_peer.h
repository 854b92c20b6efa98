// `segmux bench-frame --peer ort`: the candidate calls of one tracked frame, recorded as the product
// backend made them (same inputs), then timed on our runtime and on ONNX Runtime over the package's
// exported ONNX files (DIR/onnx/<file>.onnx). ONNX Runtime runs in a child process, so a candidate it
// cannot hold (out of memory at full size) is reported instead of ending the benchmark.
#pragma once
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/candidate_runner.h"
#include "pipeline/backends/model.h"

namespace segmux::apps {

// The candidate calls made while `recording` is on: compiled file name and a copy of its inputs. The
// copies go to an unnamed temporary file (deleted when the recorder goes), so that they do not count in
// the peak RSS the benchmark reports for the product's frame (a full-size frame's inputs are ~0.5 GiB).
class CallRecorder {
 public:
  bool recording = false;
  void record(const std::string& file, const std::map<std::string, Tensor>& inputs);
  size_t size() const { return calls_.size(); }
  const std::string& file(size_t call) const { return calls_.at(call).file; }
  std::map<std::string, Tensor> inputs(size_t call) const;  // read back from the file

 private:
  struct Spilled {
    std::string name;
    DType dtype;
    Shape shape;
    long offset;
  };
  struct Call {
    std::string file;
    std::vector<Spilled> inputs;
  };
  std::vector<Call> calls_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> spool_{nullptr, &std::fclose};
};

// The model of `model_dir` (as open_smx_model: .smx files, one shared arena) whose candidate runs are
// recorded into `rec`; `runners` gives our runner of each compiled file for re-timing.
struct RecordingBackend {
  std::shared_ptr<pipeline::Model> model;
  std::map<std::string, pipeline::CandidateRunner*> runners;
};
RecordingBackend open_recording_backend(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                        sam31::Tokenizer tokenizer, int threads, CallRecorder& rec);

struct PeerOptions {
  std::string model_dir;  // holds onnx/<file>.onnx
  int threads = 1;
  int warmup = 1, iters = 3;  // per candidate call, for both engines; medians reported
};

// Times every recorded call on our runner and on ONNX Runtime (same inputs, same thread count) and
// returns {"engine", "threads", "iters", "candidates": {FILE: {"segmux_seconds", "peer_seconds",
// "ratio"} or {"segmux_seconds", "error"}}}; ratio = segmux / peer (below 1: we are faster). A file
// called several times in the frame sums its calls.
nlohmann::json run_ort_peer(const RecordingBackend& be, const CallRecorder& rec, const PeerOptions& opt);

}  // namespace segmux::apps
