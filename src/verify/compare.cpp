#include "verify/compare.h"

#include <cmath>

namespace segmux::verify {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "pass";
    case Verdict::review:
      return "review";
    case Verdict::fail:
      return "fail";
  }
  return "?";
}

Comparison compare_tensors(const Tensor& a, const Tensor& ref, const CompareOptions& opt) {
  Comparison c;
  if (a.dtype() != ref.dtype() || a.shape() != ref.shape()) {
    c.contract_error = std::string("got ") + std::string(dtype_name(a.dtype())) + " " + shape_str(a.shape()) +
                       ", reference is " + std::string(dtype_name(ref.dtype())) + " " + shape_str(ref.shape());
    c.verdict = c.cosine_tier = c.max_abs_tier = Verdict::fail;
    c.allclose = false;
    return c;
  }
  const int64_t n = a.numel();
  c.elements = n;
  double dot = 0, na = 0, nr = 0, sum_abs = 0;
  int64_t outliers = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = a.get_as_double(i), r = ref.get_as_double(i);
    if (!std::isfinite(x) || !std::isfinite(r)) {
      bool same = (std::isnan(x) && std::isnan(r)) || x == r;
      if (!same) {
        c.nonfinite_mismatch++;
        outliers++;
      }
      continue;
    }
    double d = std::fabs(x - r);
    dot += x * r;
    na += x * x;
    nr += r * r;
    sum_abs += d;
    c.max_abs = std::max(c.max_abs, d);
    c.max_rel = std::max(c.max_rel, d / (std::fabs(r) + 1e-8));
    if (d > opt.atol + opt.rtol * std::fabs(r)) outliers++;
  }
  c.mean_abs = n ? sum_abs / double(n) : 0;
  c.outlier_ratio = n ? double(outliers) / double(n) : 0;
  c.allclose = outliers == 0;
  if (na == 0 && nr == 0)
    c.cosine = 1;
  else if (na == 0 || nr == 0)
    c.cosine = 0;
  else
    c.cosine = dot / (std::sqrt(na) * std::sqrt(nr));
  if (c.nonfinite_mismatch) c.cosine = std::min(c.cosine, 0.0);

  if (!dtype_is_float(a.dtype())) {
    // Integer and bool outputs (ids, masks) must match exactly.
    c.verdict = c.cosine_tier = c.max_abs_tier =
        c.max_abs == 0 && !c.nonfinite_mismatch ? Verdict::pass : Verdict::fail;
    return c;
  }
  c.cosine_tier = c.cosine >= 0.9999 ? Verdict::pass : c.cosine >= 0.999 ? Verdict::review : Verdict::fail;
  bool half = opt.tier_precision == "fp16" ||
              (opt.tier_precision == "auto" && (a.dtype() == DType::f16 || a.dtype() == DType::bf16));
  double pass_below = half ? 1e-2 : 1e-4, fail_from = half ? 5e-2 : 1e-3;
  c.max_abs_tier = c.nonfinite_mismatch     ? Verdict::fail
                   : c.max_abs < pass_below ? Verdict::pass
                   : c.max_abs < fail_from  ? Verdict::review
                                            : Verdict::fail;
  c.verdict = worse(c.cosine_tier, c.max_abs_tier);
  return c;
}

}  // namespace segmux::verify
