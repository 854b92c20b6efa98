// The form in which a verification child process reports (PackageVerification::to_wire) carries every
// field losslessly, NaN and infinities included (JSON has neither), and a malformed report is an error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "verify/package_verify.h"

namespace segmux::verify {
namespace {

TEST(VerifyWire, RoundTripsEveryFieldIncludingNonFinite) {
  PackageVerification v;
  PackageVerifyRow r;
  r.file = "backbone";
  r.engine = "segmux bf16 generic";
  r.path = "compiled/bf16-generic/backbone.smx";
  r.output = "vision_features";
  r.c.elements = 1234567;
  r.c.cosine = std::nan("");
  r.c.max_abs = std::numeric_limits<double>::infinity();
  r.c.mean_abs = 0.1 + 0.2;  // not exactly representable in short decimal
  r.c.max_rel = -std::numeric_limits<double>::infinity();
  r.c.outlier_ratio = 1.0 / 3.0;
  r.c.allclose = false;
  r.c.nonfinite_mismatch = 7;
  r.c.cosine_tier = verify::Verdict::fail;
  r.c.max_abs_tier = verify::Verdict::review;
  r.c.verdict = verify::Verdict::fail;
  r.max_ref = 98.765432101234567;
  r.gate = verify::Verdict::review;
  v.rows.push_back(r);
  r.c = verify::Comparison{};
  r.c.contract_error = "output missing";
  v.rows.push_back(r);
  v.notes = {"a note"};
  v.errors = {"an error"};
  const nlohmann::json wire = nlohmann::json::parse(v.to_wire().dump());
  const PackageVerification w = PackageVerification::from_wire(wire);
  ASSERT_EQ(w.rows.size(), 2u);
  const auto& a = w.rows[0].c;
  EXPECT_TRUE(std::isnan(a.cosine));
  EXPECT_EQ(a.max_abs, std::numeric_limits<double>::infinity());
  EXPECT_EQ(a.max_rel, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(a.mean_abs, 0.1 + 0.2);
  EXPECT_EQ(a.outlier_ratio, 1.0 / 3.0);
  EXPECT_EQ(a.elements, 1234567);
  EXPECT_FALSE(a.allclose);
  EXPECT_EQ(a.nonfinite_mismatch, 7);
  EXPECT_EQ(a.cosine_tier, verify::Verdict::fail);
  EXPECT_EQ(a.max_abs_tier, verify::Verdict::review);
  EXPECT_EQ(w.rows[0].max_ref, 98.765432101234567);
  EXPECT_EQ(w.rows[0].gate, verify::Verdict::review);
  EXPECT_EQ(w.rows[0].path, "compiled/bf16-generic/backbone.smx");
  EXPECT_EQ(w.rows[1].c.contract_error, "output missing");
  EXPECT_EQ(w.notes, v.notes);
  EXPECT_EQ(w.errors, v.errors);
  EXPECT_EQ(w.to_wire().dump(), v.to_wire().dump());

  nlohmann::json bad = wire;
  bad["rows"][0].erase("gate");
  EXPECT_THROW(PackageVerification::from_wire(bad), Error);
  EXPECT_THROW(PackageVerification::from_wire(nlohmann::json::array()), Error);
}

}  // namespace
}  // namespace segmux::verify
