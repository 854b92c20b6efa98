// `segmux parity`: checks every deployment candidate against a golden fixture folder. Each candidate is
// built from the folder's config.json and weights (every weights file present), run on the parity
// cases through our runtime (reference kernels; optimized kernels; compiled = passes + plan +
// executor) and through ONNX Runtime on the
// exported ONNX model, and every output is compared with the official tensors under the candidate's
// Tolerance (candidate.h).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "core/cpu_cores.h"
#include "verify/sam31/parity_cases.h"

namespace segmux::verify {

struct OutputCheck {
  bool shape_ok = true;
  std::string problem;  // shape/dtype mismatch, NaN, ...
  double cosine = 1.0;
  double max_abs = 0.0;
  double max_ref = 0.0;
  double ratio = 0.0;  // max_abs / scale (scale per Tolerance)
  double mask_iou = 1.0;
  bool iou_checked = false;
  bool pass = true;
};

// Compares one output with its reference under a tolerance.
OutputCheck check_output(const Tensor& got, const Tensor& ref, const Tolerance& tol);

struct ParityRow {
  std::string weights;  // weights file name
  std::string candidate;
  std::string case_label;
  std::string backend;  // "reference", "optimized", "compiled", "onnxruntime"
  std::string output;
  OutputCheck check;
  Tolerance tol;
};

struct ParityOptions {
  std::string fixture_dir;
  // Weights files to build from (paths). Empty: every one of weights.safetensors / weights.pt present.
  std::vector<std::string> weights_files;
  std::vector<std::string> candidates;  // empty: all
  bool reference = true;
  bool optimized = true;
  bool compiled = true;     // compiler passes + memory plan + Executor (the deployed path), fp32
  bool onnxruntime = true;  // skipped (with a note) when ONNX Runtime is not available
  bool cuda = false;        // the compiled path on the CUDA executor (segmux parity --device cuda)
  bool cuda_tf32 = false;   // its fp32 GEMMs on TF32 tensor cores
  bool tokenizer = true;
  int num_threads = usable_cores();
};

struct ParityReport {
  std::vector<ParityRow> rows;
  std::vector<std::string> failures;  // errors that are misses (a candidate that threw, a missing output)
  std::vector<std::string> notes;     // skipped backends and why
  bool passed() const;
};

// Runs everything; progress and the table go to `log` when given.
ParityReport run_parity(const ParityOptions& opt, std::ostream* log = nullptr);
// The report as the text table `segmux parity` prints.
void print_parity_report(const ParityReport& r, std::ostream& os);

}  // namespace segmux::verify
