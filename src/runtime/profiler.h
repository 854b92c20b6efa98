// Per-node profile of Executor runs (`segmux bench --profile`): a Chrome trace-event file (opens in
// Perfetto / chrome://tracing, like ONNX Runtime's profiling output) and a top-N summary with the
// achieved GFLOP/s against a FLOP estimate of the ops that do the arithmetic.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace segmux {

// Floating-point operations of one node run (a multiply-add counts 2), from its actual shapes:
// MatMul, Gemm, Conv, ConvTranspose and the fused segmux Linear and Attention. 0 for the other ops
// (their cost is memory traffic, not arithmetic).
double estimate_flops(const ir::Node& node, const std::vector<const Tensor*>& inputs,
                      const std::vector<Tensor*>& outputs);

struct ProfileEvent {
  int run = 0;       // which observed run (0-based)
  size_t node = 0;   // node index
  double ts_us = 0;  // start, microseconds since the profiler was attached
  double dur_us = 0;
  double flops = 0;      // estimate_flops
  size_t rss_bytes = 0;  // resident set size right after the node (VmRSS)
  std::vector<Shape> input_shapes, output_shapes;
};

struct ProfileRow {
  std::string key;      // op type ("domain::Op" for non-default domains) or node name
  std::string op_type;  // for node rows
  int64_t calls = 0;    // per run
  double seconds = 0;   // per run (mean over the observed runs)
  double share = 0;     // of the summed node time, 0..1
  double flops = 0;     // per run
  double gflops_per_s() const { return seconds > 0 ? flops / seconds * 1e-9 : 0; }
};

// Attaches to an executor for its lifetime (detaches in the destructor). Call begin_run()/end_run()
// around each run() to record; runs outside them are not recorded.
class ExecutorProfiler {
 public:
  explicit ExecutorProfiler(Executor& executor);
  ~ExecutorProfiler();
  ExecutorProfiler(const ExecutorProfiler&) = delete;
  ExecutorProfiler& operator=(const ExecutorProfiler&) = delete;

  void begin_run();
  void end_run();

  int runs() const { return int(run_bounds_.size()); }
  const std::vector<ProfileEvent>& events() const { return events_; }
  double run_seconds(int run) const;  // wall time of one recorded run
  double mean_run_seconds() const;

  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}: one complete ("ph": "X")
  // event per executed node and run (name = node name, cat = op type, args: shapes, GFLOP, run) and one
  // per run (cat "run").
  std::string chrome_trace_json() const;
  void write_chrome_trace(const std::string& path) const;  // atomically

  std::vector<ProfileRow> by_op_type() const;         // every op type, slowest first
  std::vector<ProfileRow> by_node(size_t top) const;  // the `top` slowest nodes
  // The two tables as text (top N rows each).
  std::string summary_text(size_t top) const;

 private:
  std::string op_key(size_t node) const;
  Executor& executor_;
  std::chrono::steady_clock::time_point origin_;
  bool recording_ = false;
  std::vector<ProfileEvent> events_;
  std::vector<std::pair<double, double>> run_bounds_;  // start, end in µs since origin
};

}  // namespace segmux
