#include "ref_test_util.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefIndex, TopKLargestSmallestAndTiesByLowerIndex) {
  Tensor x = f32({2, 4}, {1, 3, 3, 2, 5, 4, 6, 4});
  auto r = run_op("TopK", {x, i64s({2})}, {}, 2);
  expect_tensor(r[0], {2, 2}, {3, 3, 6, 5});
  expect_tensor(r[1], {2, 2}, {1, 2, 2, 0});
  auto s = run_op("TopK", {x, i64s({3})}, {{"largest", int64_t(0)}, {"axis", int64_t(1)}}, 2);
  expect_tensor(s[0], {2, 3}, {1, 2, 3, 4, 4, 5});
  expect_tensor(s[1], {2, 3}, {0, 3, 1, 1, 3, 0});
  auto z = run_op("TopK", {x, i64s({0})}, {}, 2);
  EXPECT_EQ(z[0].shape(), (Shape{2, 0}));
  EXPECT_THROW(run_op("TopK", {x, i64s({5})}, {}, 2), Error);
}

TEST(RefIndex, CumSumExclusiveReverse) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor axis = i64({}, {0});
  expect_tensor(run1("CumSum", {x, axis}), {4}, {1, 3, 6, 10});
  expect_tensor(run1("CumSum", {x, axis}, {{"exclusive", int64_t(1)}}), {4}, {0, 1, 3, 6});
  expect_tensor(run1("CumSum", {x, axis}, {{"reverse", int64_t(1)}}), {4}, {10, 9, 7, 4});
  expect_tensor(run1("CumSum", {x, axis}, {{"reverse", int64_t(1)}, {"exclusive", int64_t(1)}}), {4}, {9, 7, 4, 0});
  expect_tensor(run1("CumSum", {iota_f32({2, 2}), i64({}, {-1})}), {2, 2}, {0, 1, 2, 5});
}

TEST(RefIndex, ScatterElementsReductions) {
  Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = i64({1, 2}, {1, -2});
  Tensor upd = f32({1, 2}, {10, 20});
  expect_tensor(run1("ScatterElements", {data, idx, upd}, {{"axis", int64_t(1)}}), {1, 5}, {1, 10, 3, 20, 5});
  Tensor dup = i64({1, 2}, {1, 1});
  expect_tensor(run1("ScatterElements", {data, dup, upd}, {{"axis", int64_t(1)}, {"reduction", std::string("add")}}),
                {1, 5}, {1, 32, 3, 4, 5});
  expect_tensor(run1("ScatterElements", {data, dup, upd}, {{"axis", int64_t(1)}, {"reduction", std::string("mul")}}),
                {1, 5}, {1, 400, 3, 4, 5});
  EXPECT_THROW(run1("ScatterElements", {data, i64({1, 2}, {9, 0}), upd}, {{"axis", int64_t(1)}}), Error);
}

TEST(RefIndex, ScatterND) {
  Tensor data = iota_f32({4});
  expect_tensor(run1("ScatterND", {data, i64({2, 1}, {3, 1}), f32({2}, {9, 8})}), {4}, {0, 8, 2, 9});
  Tensor m = iota_f32({2, 2});
  expect_tensor(run1("ScatterND", {m, i64({1, 1}, {1}), f32({1, 2}, {7, 7})}, {{"reduction", std::string("add")}}),
                {2, 2}, {0, 1, 9, 10});
}

TEST(RefIndex, NonZeroHasDataDependentShape) {
  Tensor x = f32({2, 3}, {0, 1, 0, 2, 0, 3});
  Tensor y = run1("NonZero", {x});
  expect_tensor(y, {2, 3}, {0, 1, 1, 1, 0, 2});
  EXPECT_EQ(run1("NonZero", {Tensor(DType::f32, {3})}).shape(), (Shape{1, 0}));
}

TEST(RefIndex, OneHotTriluEyeLike) {
  expect_tensor(run1("OneHot", {i64s({0, 2, -1, 5}), i64({}, {3}), f32({2}, {0, 1})}), {4, 3},
                {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
  expect_tensor(run1("OneHot", {i64s({1}), i64({}, {2}), f32({2}, {-1, 1})}, {{"axis", int64_t(0)}}), {2, 1}, {-1, 1});
  Tensor m = iota_f32({3, 3}, 1, 1);
  expect_tensor(run1("Trilu", {m}), {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9});
  expect_tensor(run1("Trilu", {m, i64({}, {-1})}, {{"upper", int64_t(0)}}), {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0});
  expect_tensor(run1("EyeLike", {Tensor(DType::f32, {2, 3})}, {{"k", int64_t(1)}}), {2, 3}, {0, 1, 0, 0, 0, 1});
}
