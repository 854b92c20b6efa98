// A package's verification (verification.md / .json): every compiled file run on seeded inputs of its
// contract through the package's .smx files (every precision/target this machine can load), ONNX
// Runtime on onnx/<file>.onnx and onnx/<file>.slim.onnx, each compared with the reference kernels
// running onnx/<file>.onnx, with the route's tiers (cosine, max abs: pass / review / fail;
// docs/deploy.md). `segmux deploy` writes it, `segmux verify-package` re-runs it.
#pragma once
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu_cores.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "models/sam31/config.h"
#include "verify/compare.h"
#include "verify/seeded_inputs.h"

namespace segmux::verify {

struct PackageVerifyOptions {
  int num_threads = usable_cores();
  uint64_t seed = 20260327;  // inputs are a function of the seed and the contract only
  bool onnxruntime = true;   // skipped with a note when ONNX Runtime is not available
  // "kernels": our reference kernels (plain loops in double, one thread) run onnx/<file>.onnx;
  // "onnxruntime": ONNX Runtime does (minutes instead of hours at full size; the slim ONNX and the
  // .smx files are then compared with it).
  std::string reference = "kernels";
  // Non-empty: each compiled file is verified by this program (segmux: "/proc/self/exe") run as
  // `verify-package DIR --child-file FILE ...` in a child process, so the run's peak memory is one
  // file's (a full-size run in one process was killed for memory: docs/deploy-fullsize.md) and a
  // crash or out-of-memory kill is reported for that file. Empty: everything in this process.
  std::string child_exe;
};

struct PackageVerifyRow {
  std::string file;    // compiled file (sam31::compiled_files())
  std::string engine;  // "segmux fp32 generic" (a .smx), "onnxruntime", "onnxruntime slim"
  std::string path;    // the package file that ran
  std::string output;
  Comparison c;                  // c.verdict: the route's tiers as written (worse of cosine and max abs)
  double max_ref = 0;            // max |reference|: the scale the absolute max-abs tiers are read against
  Verdict gate = Verdict::pass;  // the package's verdict for this row (see verdict_for_package)
};

// The package's verdict from the route's tiers: a contract error, a NaN/Inf mismatch or a cosine fail
// fails; a max-abs fail with cosine pass/review is "review" (the absolute tiers do not scale with the
// output: fp32 summation order alone exceeds 1e-3 on mask logits in the tens; the route judges such
// deviations end to end, docs/deploy.md); otherwise the tiers' verdict.
Verdict verdict_for_package(const Comparison& c);

struct PackageVerification {
  std::vector<PackageVerifyRow> rows;
  std::vector<std::string> notes;   // what was not run here and why
  std::vector<std::string> errors;  // a file that failed to load or run (a fail)
  double seconds = 0;
  uint64_t seed = 0;
  std::string reference;  // what produced the reference outputs
  Verdict verdict() const;
  nlohmann::json to_json() const;
  std::string to_markdown() const;
  // Lossless form (every field, non-finite numbers included) a child process reports in.
  nlohmann::json to_wire() const;
  static PackageVerification from_wire(const nlohmann::json& j);
};

// Verifies the models of the package folder `dir` (its model.json gives the config).
PackageVerification verify_package_models(const std::string& dir, const PackageVerifyOptions& opt, std::ostream* log);

// The child process's side of opt.child_exe: verifies the compiled file `file` of `dir` (opt.onnxruntime
// as the parent resolved it) and writes the result's wire form, or {"error": ...}, to kChildReportFd
// (io/child_process.h). Returns the process's exit code. For tests only, the environment variable
// SEGMUX_TEST_VERIFY_CHILD_FAULT=<file>:<crash|kill|exit|fail> makes it fail on purpose.
int verify_package_file_child(const std::string& dir, const std::string& file, const PackageVerifyOptions& opt);

}  // namespace segmux::verify
