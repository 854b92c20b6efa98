// The verification tiers of docs/deploy.md (the deployment route's).
#include <gtest/gtest.h>

#include <cmath>

#include "verify/compare.h"

using namespace segmux;

TEST(Compare, TiersFollowTheRoute) {
  Tensor ref = Tensor::from_vector<float>({4}, {1, -2, 3, 0.5f});
  verify::Comparison same = verify::compare_tensors(ref, ref);
  EXPECT_EQ(same.verdict, verify::Verdict::pass);
  EXPECT_DOUBLE_EQ(same.cosine, 1.0);
  EXPECT_TRUE(same.allclose);

  Tensor drift = ref.clone();
  drift.data<float>()[0] += 5e-4f;  // max abs in [1e-4, 1e-3): review
  verify::Comparison r = verify::compare_tensors(drift, ref);
  EXPECT_EQ(r.max_abs_tier, verify::Verdict::review);
  EXPECT_EQ(r.cosine_tier, verify::Verdict::pass);
  EXPECT_EQ(r.verdict, verify::Verdict::review);
  EXPECT_FALSE(r.allclose);
  EXPECT_DOUBLE_EQ(r.outlier_ratio, 0.25);
  EXPECT_NEAR(r.max_rel, 5e-4, 1e-6);

  Tensor off = ref.clone();
  off.data<float>()[1] = 2;  // sign flip: cosine far below 0.999
  verify::Comparison f = verify::compare_tensors(off, ref);
  EXPECT_EQ(f.cosine_tier, verify::Verdict::fail);
  EXPECT_EQ(f.verdict, verify::Verdict::fail);

  Tensor nan = ref.clone();
  nan.data<float>()[2] = NAN;
  EXPECT_EQ(verify::compare_tensors(nan, ref).verdict, verify::Verdict::fail);
  EXPECT_EQ(verify::compare_tensors(nan, nan).verdict, verify::Verdict::pass);
}

TEST(Compare, ContractAndIntegers) {
  Tensor a = Tensor::from_vector<float>({2}, {1, 2});
  Tensor b = Tensor::from_vector<float>({1, 2}, {1, 2});
  verify::Comparison c = verify::compare_tensors(a, b);
  EXPECT_EQ(c.verdict, verify::Verdict::fail);
  EXPECT_FALSE(c.contract_error.empty());
  Tensor i1 = Tensor::from_vector<int64_t>({2}, {1, 2}), i2 = Tensor::from_vector<int64_t>({2}, {1, 3});
  EXPECT_EQ(verify::compare_tensors(i1, i1).verdict, verify::Verdict::pass);
  EXPECT_EQ(verify::compare_tensors(i1, i2).verdict, verify::Verdict::fail);
}

TEST(Compare, HalfPrecisionThresholds) {
  Tensor ref = Tensor::from_vector<float>({2}, {1, 2});
  Tensor a = Tensor::from_vector<float>({2}, {1.005f, 2});
  verify::CompareOptions fp16;
  fp16.tier_precision = "fp16";
  EXPECT_EQ(verify::compare_tensors(a, ref, fp16).max_abs_tier, verify::Verdict::pass);
  EXPECT_EQ(verify::compare_tensors(a, ref).max_abs_tier, verify::Verdict::fail);
  EXPECT_EQ(verify::compare_tensors(ref.cast(DType::bf16), ref.cast(DType::bf16)).verdict, verify::Verdict::pass);
}
