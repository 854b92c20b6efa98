#include "ref_test_util.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefReduce, ReduceSumAxesInputAndAttribute) {
  Tensor x = iota_f32({2, 3});
  expect_tensor(run1("ReduceSum", {x, i64s({1})}), {2, 1}, {3, 12});
  expect_tensor(run1("ReduceSum", {x, i64s({-2})}, {{"keepdims", int64_t(0)}}), {3}, {3, 5, 7});
  expect_tensor(run1("ReduceSum", {x}), {1, 1}, {15});
  expect_tensor(run1("ReduceSum", {x, i64s({})}, {{"noop_with_empty_axes", int64_t(1)}}), {2, 3}, values(x));
  // Attribute form is accepted too (opset < 13 files).
  expect_tensor(run1("ReduceSum", {x}, {{"axes", std::vector<int64_t>{0}}}), {1, 3}, {3, 5, 7});
  expect_tensor(run1("ReduceSum", {i64({2}, {INT64_C(1) << 60, 1})}), {1}, {double((INT64_C(1) << 60) + 1)});
}

TEST(RefReduce, OtherReductions) {
  Tensor x = f32({2, 2}, {1, -2, 3, 4});
  auto ax = [](std::vector<int64_t> a) { return ir::Attrs{{"axes", a}, {"keepdims", int64_t(0)}}; };
  expect_tensor(run1("ReduceMean", {x}, ax({1})), {2}, {-0.5, 3.5});
  expect_tensor(run1("ReduceMax", {x}, ax({0})), {2}, {3, 4});
  expect_tensor(run1("ReduceMin", {x}, ax({0, 1})), {}, {-2});
  expect_tensor(run1("ReduceProd", {x}, ax({1})), {2}, {-2, 12});
  expect_tensor(run1("ReduceL2", {x}, ax({1})), {2}, {std::sqrt(5.0), 5});
  expect_tensor(run1("ReduceL1", {x}, ax({1})), {2}, {3, 7});
  expect_tensor(run1("ReduceSumSquare", {x}, ax({1})), {2}, {5, 25});
  expect_tensor(run1("ReduceLogSumExp", {x}, ax({1})), {2},
                {std::log(std::exp(1.0) + std::exp(-2.0)), std::log(std::exp(3.0) + std::exp(4.0))});
  expect_tensor(run1("ReduceLogSum", {f32({2}, {1, 2})}), {1}, {std::log(3.0)});
  EXPECT_THROW(run1("ReduceMax", {x}, ax({2})), Error);
}

TEST(RefReduce, EmptyReductions) {
  Tensor e(DType::f32, {0, 2});
  expect_tensor(run1("ReduceSum", {e, i64s({0})}), {1, 2}, {0, 0});
  expect_tensor(run1("ReduceProd", {e}, {{"axes", std::vector<int64_t>{0}}}), {1, 2}, {1, 1});
  expect_tensor(run1("ReduceMax", {e}, {{"axes", std::vector<int64_t>{0}}}), {1, 2}, {-INFINITY, -INFINITY});
  expect_tensor(run1("ReduceMean", {e}, {{"axes", std::vector<int64_t>{0}}}), {1, 2}, {NAN, NAN});
  EXPECT_EQ(run1("ReduceSum", {e, i64s({1})}).shape(), (Shape{0, 1}));
}

TEST(RefReduce, ArgMaxArgMin) {
  Tensor x = f32({2, 3}, {1, 5, 5, 7, 0, 7});
  expect_tensor(run1("ArgMax", {x}, {{"axis", int64_t(1)}}), {2, 1}, {1, 0});
  expect_tensor(
      run1("ArgMax", {x}, {{"axis", int64_t(1)}, {"select_last_index", int64_t(1)}, {"keepdims", int64_t(0)}}), {2},
      {2, 2});
  expect_tensor(run1("ArgMin", {x}, {{"axis", int64_t(0)}}), {1, 3}, {0, 1, 0});
  EXPECT_EQ(run1("ArgMax", {x}).dtype(), DType::i64);
}

TEST(RefReduce, SoftmaxLogSoftmaxHardmax) {
  Tensor x = f32({2, 3}, {1, 2, 3, 0, 0, 1000});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_tensor(run1("Softmax", {x}), {2, 3}, {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 0, 0, 1});
  expect_tensor(run1("LogSoftmax", {x}), {2, 3}, {1 - std::log(z), 2 - std::log(z), 3 - std::log(z), -1000, -1000, 0},
                1e-4);
  expect_tensor(run1("Softmax", {f32({2, 1}, {1, 3})}, {{"axis", int64_t(0)}}), {2, 1},
                {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(-2.0))});
  expect_tensor(run1("Hardmax", {f32({1, 3}, {1, 3, 3})}), {1, 3}, {0, 1, 0});
  EXPECT_EQ(run1("Softmax", {Tensor(DType::f32, {0, 3})}).shape(), (Shape{0, 3}));
}

TEST(RefReduce, LayerNormalizationWithOptionalOutputs) {
  Tensor x = f32({2, 2}, {1, 3, -1, 1});
  Tensor scale = f32({2}, {1, 2});
  Tensor bias = f32({2}, {0, 1});
  auto outs = run_op("LayerNormalization", {x, scale, bias}, {{"epsilon", 0.0f}}, 3);
  expect_tensor(outs[0], {2, 2}, {-1, 3, -1, 3}, 1e-6);
  expect_tensor(outs[1], {2, 1}, {2, 0});
  EXPECT_EQ(outs[1].dtype(), DType::f32);
  expect_tensor(outs[2], {2, 1}, {1, 1});
  Tensor y = run1("LayerNormalization", {iota_f32({1, 2, 2}), f32({2, 2}, {1, 1, 1, 1})}, {{"axis", int64_t(1)}});
  const double s = 1.0 / std::sqrt(1.25 + 1e-5);
  expect_tensor(y, {1, 2, 2}, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-5);
}

TEST(RefReduce, InstanceAndBatchNormalization) {
  Tensor x = f32({1, 2, 2}, {1, 3, 5, 5});
  expect_tensor(run1("InstanceNormalization", {f32({1, 2, 2}, {1, 3, 5, 7}), f32({2}, {1, 2}), f32({2}, {0, 1})},
                     {{"epsilon", 0.0f}}),
                {1, 2, 2}, {-1, 1, -1, 3});
  expect_tensor(run1("BatchNormalization", {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 5}), f32({2}, {4, 1})},
                     {{"epsilon", 0.0f}}),
                {1, 2, 2}, {0, 1, 1, 1});
  EXPECT_THROW(
      run1("BatchNormalization", {x, f32({3}, {1, 1, 1}), f32({2}, {0, 1}), f32({2}, {1, 5}), f32({2}, {4, 1})}),
      Error);
}
