#include "apps/bench_frame_peer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "apps/child_process.h"
#include "core/error.h"
#include "engines/ort/ort_model.h"
#include "pipeline/backends/candidate_model.h"
#include "pipeline/backends/ort_backend.h"
#include "pipeline/backends/smx_runner.h"
#include "runtime/executor.h"
#include "runtime/offline_model.h"

namespace segmux::apps {

namespace {

using Clock = std::chrono::steady_clock;
using Inputs = std::map<std::string, Tensor>;

// Our runtime on one .smx file, recording the inputs of each call while the recorder says so.
class RecordingRunner : public pipeline::CandidateRunner {
 public:
  RecordingRunner(std::string file, std::unique_ptr<pipeline::CandidateRunner> ours, CallRecorder& rec)
      : file_(std::move(file)), ours_(std::move(ours)), rec_(rec) {}
  Inputs run(const Inputs& in) override {
    if (rec_.recording) rec_.record(file_, in);  // a copy: the caller may reuse its buffers after the call
    return ours_->run(in);
  }
  // As the product backend's runner (pipeline/backends/smx_runner.h): same outputs, same memory.
  void set_wanted_outputs(std::vector<std::string> names) override { ours_->set_wanted_outputs(std::move(names)); }
  bool has_output(const std::string& name) const override { return ours_->has_output(name); }
  void release() override { ours_->release(); }

 private:
  std::string file_;
  std::unique_ptr<pipeline::CandidateRunner> ours_;
  CallRecorder& rec_;
};

// Median seconds of `iters` runs of `fn` after `warmup` untimed ones.
template <typename Fn>
double median_seconds(int warmup, int iters, Fn&& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, iters); ++i) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// ONNX Runtime on `onnx` for the calls of one file, in a child process: {"peer_seconds"} or {"error"}.
nlohmann::json time_peer_in_child(const std::string& onnx, const std::vector<const Inputs*>& calls,
                                  const PeerOptions& opt) {
  const ChildOutcome child = run_in_child([&](int report_fd) {
    nlohmann::json r;
    try {
      OrtModel model(onnx, OrtModelOptions{opt.threads, true, true});
      double total = 0;
      for (const Inputs* in : calls) total += median_seconds(opt.warmup, opt.iters, [&] { model.run(*in); });
      r["peer_seconds"] = total;
    } catch (const std::exception& e) {
      r["error"] = e.what();
    }
    write_all(report_fd, r.dump());
    return 0;
  });
  if (WIFSIGNALED(child.status)) {
    const int sig = WTERMSIG(child.status);
    return {{"error", sig == SIGKILL ? std::string("ONNX Runtime could not hold it: killed (SIGKILL, most likely out "
                                                   "of memory)")
                                     : std::string("ONNX Runtime died of signal ") + strsignal(sig)}};
  }
  nlohmann::json r = nlohmann::json::parse(child.output, nullptr, false);
  if (r.is_discarded() || !r.is_object()) return {{"error", "the ONNX Runtime child process sent no result"}};
  return r;
}

}  // namespace

void CallRecorder::record(const std::string& file, const std::map<std::string, Tensor>& inputs) {
  if (!spool_) {
    spool_.reset(std::tmpfile());
    SEGMUX_CHECK(spool_ != nullptr, "bench-frame: cannot create a temporary file for the recorded calls (",
                 std::strerror(errno), ")");
  }
  Call call{file, {}};
  for (const auto& [name, t] : inputs) {
    SEGMUX_CHECK(std::fseek(spool_.get(), 0, SEEK_END) == 0, "bench-frame: cannot seek the recorded calls' file");
    const long offset = std::ftell(spool_.get());
    SEGMUX_CHECK(std::fwrite(t.raw(), 1, t.nbytes(), spool_.get()) == t.nbytes(),
                 "bench-frame: cannot write the recorded calls' file (", std::strerror(errno), ")");
    call.inputs.push_back({name, t.dtype(), t.shape(), offset});
  }
  SEGMUX_CHECK(std::fflush(spool_.get()) == 0, "bench-frame: cannot write the recorded calls' file (",
               std::strerror(errno), ")");
  calls_.push_back(std::move(call));
}

std::map<std::string, Tensor> CallRecorder::inputs(size_t call) const {
  std::map<std::string, Tensor> out;
  for (const Spilled& s : calls_.at(call).inputs) {
    Tensor t(s.dtype, s.shape);
    SEGMUX_CHECK(std::fseek(spool_.get(), s.offset, SEEK_SET) == 0 &&
                     std::fread(t.raw(), 1, t.nbytes(), spool_.get()) == t.nbytes(),
                 "bench-frame: cannot read back the recorded input '", s.name, "'");
    out.emplace(s.name, std::move(t));
  }
  return out;
}

RecordingBackend open_recording_backend(const sam31::ModelConfig& cfg, const std::string& model_dir,
                                        sam31::Tokenizer tokenizer, int threads, CallRecorder& rec) {
  RecordingBackend out;
  ExecutorOptions ex{threads, true};
  ex.shared_arena = std::make_shared<SharedArena>();  // as open_smx_model: candidates run in turn
  auto open = [&](const sam31::CompiledFile& f) -> std::unique_ptr<pipeline::CandidateRunner> {
    auto r = std::make_unique<RecordingRunner>(f.file, pipeline::open_smx_runner(model_dir + "/" + f.file + ".smx", ex),
                                               rec);
    out.runners[f.file] = r.get();
    return r;
  };
  out.model = pipeline::open_candidate_model(cfg, open, std::move(tokenizer));
  return out;
}

nlohmann::json run_ort_peer(const RecordingBackend& be, const CallRecorder& rec, const PeerOptions& opt) {
  SEGMUX_CHECK(!rec.recording, "run_ort_peer: stop recording first (the re-timed calls would be recorded)");
  std::map<std::string, std::vector<size_t>> by_file;  // in file-name order
  for (size_t i = 0; i < rec.size(); ++i) by_file[rec.file(i)].push_back(i);
  nlohmann::json cands = nlohmann::json::object();
  for (const auto& [file, indices] : by_file) {
    std::vector<Inputs> inputs;  // one file's calls in memory at a time
    for (size_t i : indices) inputs.push_back(rec.inputs(i));
    std::vector<const Inputs*> calls;
    for (const Inputs& in : inputs) calls.push_back(&in);
    pipeline::CandidateRunner* ours = be.runners.at(file);
    double segmux_s = 0;
    for (const Inputs* in : calls) segmux_s += median_seconds(opt.warmup, opt.iters, [&] { ours->run(*in); });
    nlohmann::json c = {{"calls", calls.size()}, {"segmux_seconds", segmux_s}};
    const std::string onnx = pipeline::onnx_candidate_path(opt.model_dir, file);
    nlohmann::json peer =
        std::filesystem::exists(onnx) ? time_peer_in_child(onnx, calls, opt) : nlohmann::json{{"error", "no " + onnx}};
    if (peer.contains("peer_seconds")) {
      c["peer_seconds"] = peer["peer_seconds"];
      c["ratio"] = segmux_s / std::max(peer["peer_seconds"].get<double>(), 1e-12);
    } else {
      c["error"] = peer.value("error", "unknown error");
    }
    cands[file] = c;
  }
  return {{"engine", "onnxruntime"},
          {"threads", opt.threads},
          {"warmup", opt.warmup},
          {"iters", opt.iters},
          {"candidates", cands}};
}

}  // namespace segmux::apps
