// bench_propagation_decoder: the whole propagation decoder candidate of a checkpoint (built, compiled and
// run by our Executor as the product does) with every memory and pointer slot valid, the steady state
// of a tracked video (random inputs would give most slots a huge negative key bias instead). Prints the
// FLOP estimate, wall and CPU time per run (medians), GFLOP/s against one core's FMA peak measured in
// the same run by CPU time (stable on a shared machine), and the time per op type.
// Usage: bench_propagation_decoder CKPT [CONFIG.json|full] [threads=2] [reps=3] [fp32|bf16]
#include <omp.h>

#include <cstdlib>

#include "bench_common.h"
#include "compiler/compile.h"
#include "compiler/graph_stats.h"
#include "models/sam31/config.h"
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/tensor_names.h"
#include "runtime/executor.h"
#include "verify/sam31/fixture_config.h"
#include "verify/seeded_inputs.h"

using namespace segmux;
using namespace segmux::bench;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_propagation_decoder CKPT [CONFIG.json|full] [threads] [reps] [fp32|bf16]\n");
    return 2;
  }
  const std::string config = argc > 2 ? argv[2] : "full";
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int reps = argc > 4 ? std::max(1, std::atoi(argv[4])) : 3;
  const std::string precision = argc > 5 ? argv[5] : "fp32";
  omp_set_num_threads(threads);
  print_load();
  const sam31::ModelConfig cfg =
      config == "full" ? sam31::ModelConfig{} : segmux::verify::load_model_or_fixture_config(config);
  const sam31::Weights w = sam31::Weights::load(argv[1]);
  ir::Graph g = sam31::build_propagation_decoder(cfg, w);
  std::map<std::string, Tensor> inputs = verify::seeded_contract_inputs(g, cfg, 1);
  for (const char* name : {"memory_valid", "obj_ptr_valid"}) {
    auto it = inputs.find(name);
    SEGMUX_CHECK(it != inputs.end(), "the propagation decoder has no input ", name);
    for (int64_t i = 0; i < it->second.numel(); ++i) it->second.set_from_double(i, 1.0);
  }
  compiler::CompileOptions co;
  co.precision = precision;
  compiler::CompileResult r = compiler::compile_graph(std::move(g), co);
  const double gflop = compiler::graph_stats(r.graph).flops / 1e9;
  ExecutorOptions eo;
  eo.num_threads = threads;
  Executor ex(r.graph, r.plan, eo);
  std::map<std::string, double> op_seconds;
  ex.set_node_observer([&](const NodeRun& n) {
    const std::string op = n.node.domain.empty() ? n.node.op_type : n.node.domain + "::" + n.node.op_type;
    op_seconds[op] += std::chrono::duration<double>(n.end - n.start).count();
  });
  const double core_peak = peak_per_cpu_second();
  ex.run(inputs);  // warm-up (first touch, prepacking)
  op_seconds.clear();
  std::vector<double> wall, cpu;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_s(), c0 = cpu_s();
    ex.run(inputs);
    wall.push_back(now_s() - t0);
    cpu.push_back(cpu_s() - c0);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  const double wm = wall[wall.size() / 2], cm = cpu[cpu.size() / 2];
  std::printf("propagation_decoder (%s, image %d, %d thread(s), every slot valid): %.1f GFLOP per run\n",
              precision.c_str(), cfg.image_size, threads, gflop);
  std::printf(
      "  wall median %.3f s (%.1f GFLOP/s), CPU median %.3f s: %.1f GFLOP per CPU-s = %.1f %% of one "
      "core's FMA peak (%.1f GFLOP per CPU-s)\n",
      wm, gflop / wm, cm, gflop / cm, 100 * gflop / cm / core_peak, core_peak);
  double total = 0;
  for (auto& [op, s] : op_seconds) total += s;
  std::vector<std::pair<double, std::string>> ops;
  for (auto& [op, s] : op_seconds) ops.push_back({s, op});
  std::sort(ops.rbegin(), ops.rend());
  for (size_t i = 0; i < ops.size() && i < 6; ++i)
    std::printf("  %-28s %9.1f ms/run %6.1f %%\n", ops[i].second.c_str(), 1e3 * ops[i].first / reps,
                100 * ops[i].first / total);
  print_load();
  return 0;
}
