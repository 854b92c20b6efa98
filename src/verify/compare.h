// Output comparison with the deployment route's verification semantics (docs/deploy.md, "Verification"):
// cosine, max abs, mean abs, max relative |a-b|/(|ref|+1e-8), allclose(atol, rtol), outlier ratio
// (|a-b| > atol + rtol*|ref|), and the onnx-debug tiers pass / review / fail.
#pragma once
#include <string>

#include "core/tensor.h"

namespace segmux::verify {

enum class Verdict { pass = 0, review = 1, fail = 2 };
std::string_view verdict_name(Verdict v);
inline Verdict worse(Verdict a, Verdict b) { return int(a) > int(b) ? a : b; }

struct CompareOptions {
  double atol = 1e-5;  // polygraphy's default
  double rtol = 1e-5;
  // Max-abs tier thresholds: "fp32" (1e-4 / 1e-3) or "fp16" (1e-2 / 5e-2). "auto": fp16 when either
  // tensor is f16 or bf16.
  std::string tier_precision = "auto";
};

struct Comparison {
  std::string contract_error;  // non-empty: dtype/shape mismatch (a hard fail); metrics not computed
  int64_t elements = 0;
  double cosine = 1, max_abs = 0, mean_abs = 0, max_rel = 0, outlier_ratio = 0;
  bool allclose = true;
  int64_t nonfinite_mismatch = 0;  // positions where NaN/Inf differ
  Verdict cosine_tier = Verdict::pass, max_abs_tier = Verdict::pass, verdict = Verdict::pass;
};

// `ref` is the reference: relative measures divide by |ref|.
Comparison compare_tensors(const Tensor& actual, const Tensor& ref, const CompareOptions& opt = {});

}  // namespace segmux::verify
