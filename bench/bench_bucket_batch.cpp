// bench_bucket_batch: several multiplex buckets of one tracker state in ONE call of a tracker candidate
// (its "buckets<B>" variant, models/sam31/bucket_batch.h) against one call per bucket (what the product
// runs), same inputs, compiled and run by our Executor as the product does. The two are timed in turns
// (A, B, A, B, ...) on the same machine and the ratio of the medians is printed, so the figure holds on
// a loaded host. Memory and pointer slots are all valid (the steady state of a tracked video).
// Usage: bench_bucket_batch CKPT [CONFIG.json|full] [threads=2] [reps=3] [buckets=2,4] [candidates=both]
//        candidates: propagation_decoder, memory_encoder or both
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "bench_common.h"
#include "compiler/compile.h"
#include "models/sam31/bucket_batch.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"
#include "runtime/executor.h"
#include "verify/sam31/fixture_config.h"
#include "verify/seeded_inputs.h"

using namespace segmux;
using namespace segmux::bench;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::unique_ptr<Executor> compiled(ir::Graph g, int threads, compiler::CompileResult* keep) {
  *keep = compiler::compile_graph(std::move(g), compiler::CompileOptions{});
  ExecutorOptions eo;
  eo.num_threads = threads;
  return std::make_unique<Executor>(keep->graph, keep->plan, eo);
}

// One bucket's inputs of the candidate, each bucket seeded differently; validity flags set to 1.
std::map<std::string, Tensor> bucket_inputs(const ir::Graph& one, const sam31::ModelConfig& cfg, uint64_t seed) {
  std::map<std::string, Tensor> in = verify::seeded_contract_inputs(one, cfg, seed);
  for (auto& [name, t] : in)
    if (name == "memory_valid" || name == "obj_ptr_valid" || name == "slot_valid")
      for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, 1.0);
  return in;
}

void compare(const sam31::Candidate& cand, const sam31::ModelConfig& cfg, const sam31::Weights& w, int buckets,
             int threads, int reps) {
  const ir::Graph one = cand.build(cfg, w);
  const std::vector<std::string>& split = sam31::per_bucket_inputs(cand.id);
  std::vector<std::map<std::string, Tensor>> per_bucket;
  for (int k = 0; k < buckets; ++k) per_bucket.push_back(bucket_inputs(one, cfg, 11 + uint64_t(k)));
  // The shared inputs are bucket 0's in every bucket (as in a tracker state).
  for (int k = 1; k < buckets; ++k)
    for (auto& [name, t] : per_bucket[size_t(k)])
      if (std::find(split.begin(), split.end(), name) == split.end()) t = per_bucket[0].at(name);
  const std::map<std::string, Tensor> stacked = sam31::stack_bucket_inputs(per_bucket, split);
  compiler::CompileResult r1, rb;
  auto single = compiled(one, threads, &r1);
  auto batched = compiled(cand.build(cfg, w, sam31::bucket_variant("", buckets)), threads, &rb);
  auto run_single = [&] {
    for (const auto& in : per_bucket) single->run(in);
  };
  run_single();  // warm-up (first touch, prepacking)
  batched->run(stacked);
  // Wall time and process CPU time (the steadier figure on a shared machine), in turns.
  std::vector<double> wa, wb, ca, cb;
  for (int i = 0; i < reps; ++i) {
    double t0 = now_s(), c0 = cpu_s();
    run_single();
    wa.push_back(now_s() - t0);
    ca.push_back(cpu_s() - c0);
    t0 = now_s(), c0 = cpu_s();
    batched->run(stacked);
    wb.push_back(now_s() - t0);
    cb.push_back(cpu_s() - c0);
  }
  std::printf(
      "%-20s image %4d, %d buckets, %d thread(s), %d turns: %d calls %.3f s wall / %.3f CPU-s, one call %.3f s "
      "wall / %.3f CPU-s: batched / per-bucket = %.3f wall, %.3f CPU (compiled nodes: %zu per bucket, %zu "
      "batched; arena %.1f MB, %.1f MB)\n",
      cand.name.c_str(), cfg.image_size, buckets, threads, reps, buckets, median(wa), median(ca), median(wb),
      median(cb), median(wb) / median(wa), median(cb) / median(ca), r1.graph.nodes.size(), rb.graph.nodes.size(),
      double(r1.plan.arena_bytes) / 1e6, double(rb.plan.arena_bytes) / 1e6);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_bucket_batch CKPT [CONFIG.json|full] [threads] [reps] [buckets=2,4] "
                 "[propagation_decoder|memory_encoder|both]\n");
    return 2;
  }
  const std::string config = argc > 2 ? argv[2] : "full";
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int reps = argc > 4 ? std::max(1, std::atoi(argv[4])) : 3;
  std::vector<int> bucket_counts;
  std::stringstream list(argc > 5 ? argv[5] : "2,4");
  for (std::string item; std::getline(list, item, ',');) bucket_counts.push_back(std::max(2, std::atoi(item.c_str())));
  const std::string which = argc > 6 ? argv[6] : "both";
  omp_set_num_threads(threads);
  print_load();
  const sam31::ModelConfig cfg =
      config == "full" ? sam31::ModelConfig{} : segmux::verify::load_model_or_fixture_config(config);
  const sam31::Weights w = sam31::Weights::load(argv[1]);
  for (sam31::CandidateId id : {sam31::CandidateId::propagation_decoder, sam31::CandidateId::memory_encoder}) {
    const sam31::Candidate& cand = sam31::candidate(id);
    if (which != "both" && which != cand.name) continue;
    for (int b : bucket_counts) compare(cand, cfg, w, b, threads, reps);
  }
  print_load();
  return 0;
}
