// Whether a rewritten model (slimmed, re-exported) still computes what the original computes: both run
// on the same seeded inputs through our reference kernels and, when their files are given and ONNX
// Runtime is available, through ONNX Runtime; every output of the rewrite is compared with the
// original's (verify/compare.h tiers; on ONNX Runtime a max-abs miss within twice ONNX Runtime's own
// deviation from the reference kernels on the original model passes, and the report says so).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "verify/compare.h"
#include "verify/seeded_inputs.h"

namespace segmux::verify {

struct EquivalenceCheck {
  std::string engine;   // "reference" or "onnxruntime"
  std::string skipped;  // non-empty: why this engine did not run
  std::vector<std::pair<std::string, Comparison>> outputs;
  // Outputs passed because the rewrite's deviation is within twice the engine's own deviation from the
  // reference kernels on the original model (that deviation, by name).
  std::map<std::string, double> noise;
  Verdict verdict = Verdict::pass;
};

struct EquivalenceReport {
  std::vector<EquivalenceCheck> checks;
  Verdict verdict() const;  // the worst check that ran
  std::string to_text() const;
};

// `before_file` / `after_file`: the models as files for ONNX Runtime (empty: no ONNX Runtime check).
EquivalenceReport check_equivalent(const ir::Graph& before, const ir::Graph& after, const std::string& before_file,
                                   const std::string& after_file, uint64_t seed = 1234, int num_threads = 2);

}  // namespace segmux::verify
