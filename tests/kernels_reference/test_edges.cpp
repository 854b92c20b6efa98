// Edge shapes across many ops: empty tensors (numel 0), size-1 dims, odd sizes, negative axes,
// and 16-bit float inputs.
#include "ref_test_util.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefEdges, UnaryOpsOnEmptyAndOddShapes) {
  const char* ops[] = {"Sqrt",  "Exp",  "Log",         "Erf",      "Tanh",      "Sigmoid",   "Relu",
                       "Neg",   "Abs",  "Reciprocal",  "Sin",      "Cos",       "Floor",     "Ceil",
                       "Round", "Sign", "Softplus",    "Softsign", "HardSwish", "LeakyRelu", "Elu",
                       "Selu",  "Celu", "HardSigmoid", "IsNaN",    "IsInf",     "Identity"};
  for (const char* op : ops) {
    EXPECT_EQ(run1(op, {Tensor(DType::f32, {2, 0, 3})}).shape(), (Shape{2, 0, 3})) << op;
    Tensor x = iota_f32({3, 1, 5}, 0.25f, 0.5f);
    Tensor y = run1(op, {x});
    EXPECT_EQ(y.shape(), (Shape{3, 1, 5})) << op;
    // bf16 in, bf16 out, equal to the f32 result rounded.
    Tensor yb = run1(op, {x.cast(DType::bf16)});
    if (y.dtype() == DType::f32) {
      ASSERT_EQ(yb.dtype(), DType::bf16) << op;
      Tensor ref = run1(op, {x.cast(DType::bf16).cast(DType::f32)}).cast(DType::bf16);
      EXPECT_TRUE(yb.identical(ref)) << op;
    }
  }
}

TEST(RefEdges, ReductionsAndNormsWithNegativeAxesAndEmptyBatches) {
  Tensor x = iota_f32({2, 3, 5});
  Tensor a = run1("ReduceMean", {x}, {{"axes", std::vector<int64_t>{-1, -3}}});
  expect_tensor(a, {1, 3, 1}, {(0 + 1 + 2 + 3 + 4 + 15 + 16 + 17 + 18 + 19) / 10.0, 14.5, 19.5});
  EXPECT_EQ(run1("Softmax", {x}, {{"axis", int64_t(-2)}}).shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(run1("ArgMax", {x}, {{"axis", int64_t(-1)}, {"keepdims", int64_t(0)}}).shape(), (Shape{2, 3}));
  Tensor e(DType::f32, {0, 4});
  EXPECT_EQ(run1("LayerNormalization", {e, f32({4}, {1, 1, 1, 1})}).shape(), (Shape{0, 4}));
  EXPECT_EQ(run1("Softmax", {e}).shape(), (Shape{0, 4}));
  EXPECT_EQ(run1("ArgMax", {e}, {{"axis", int64_t(1)}}).shape(), (Shape{0, 1}));
  EXPECT_THROW(run1("ArgMax", {e}, {{"axis", int64_t(0)}}), Error);  // argmax over an empty axis
  EXPECT_EQ(run1("InstanceNormalization", {Tensor(DType::f32, {0, 2, 3}), f32({2}, {1, 1}), f32({2}, {0, 0})}).shape(),
            (Shape{0, 2, 3}));
}

TEST(RefEdges, ConvPoolMatMulWithEmptyBatchAndSizeOneDims) {
  Tensor w = iota_f32({4, 3, 3, 3});
  EXPECT_EQ(run1("Conv", {Tensor(DType::f32, {0, 3, 5, 5}), w}).shape(), (Shape{0, 4, 3, 3}));
  Tensor x1 = iota_f32({1, 3, 1, 7});
  Tensor y = run1("Conv", {x1, iota_f32({2, 3, 1, 3})}, {{"strides", std::vector<int64_t>{1, 2}}});
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 3}));
  // Channel 0 of y at position 0: sum over c,k of x[c][k] * w[0][c][k].
  double expect = 0;
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 3; ++k) expect += (c * 7 + k) * (c * 3 + k);
  EXPECT_NEAR(y.data<float>()[0], expect, 1e-3);
  EXPECT_EQ(run1("MaxPool", {Tensor(DType::f32, {0, 2, 4, 4})}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}).shape(),
            (Shape{0, 2, 3, 3}));
  EXPECT_EQ(run1("MatMul", {Tensor(DType::f32, {0, 2, 3}), iota_f32({3, 4})}).shape(), (Shape{0, 2, 4}));
  EXPECT_EQ(run1("Gemm", {Tensor(DType::f32, {0, 3}), iota_f32({3, 4})}).shape(), (Shape{0, 4}));
}

TEST(RefEdges, IntegerShapeMathOnI32AndI64) {
  Tensor a = Tensor::from_vector<int32_t>({3}, {7, -8, 9});
  Tensor b = Tensor::from_vector<int32_t>({1}, {2});
  expect_tensor(run1("Add", {a, b}), {3}, {9, -6, 11});
  expect_tensor(run1("Mul", {a, b}), {3}, {14, -16, 18});
  expect_tensor(run1("Div", {a, b}), {3}, {3, -4, 4});
  expect_tensor(run1("Mod", {a, b}), {3}, {1, 0, 1});
  expect_tensor(run1("ReduceProd", {a}, {{"keepdims", int64_t(0)}}), {}, {-504});
  expect_tensor(run1("Max", {a, b}), {3}, {7, 2, 9});
  expect_tensor(run1("Cast", {a}, {{"to", int64_t(7)}}), {3}, {7, -8, 9});
  expect_tensor(run1("Gather", {a, Tensor::from_vector<int32_t>({2}, {-1, 0})}), {2}, {9, 7});
  expect_tensor(run1("CumSum", {a, Tensor::from_vector<int32_t>({}, {0})}), {3}, {7, -1, 8});
  // i64 arithmetic wraps instead of invoking undefined behaviour.
  expect_tensor(run1("Add", {i64s({INT64_MAX}), i64s({1})}), {1}, {double(INT64_MIN)});
}

TEST(RefEdges, SixteenBitThroughShapeAndNnOps) {
  Tensor x = iota_f32({1, 2, 3, 3}, 0.5f).cast(DType::f16);
  EXPECT_EQ(run1("Transpose", {x}).dtype(), DType::f16);
  EXPECT_EQ(run1("Concat", {x, x}, {{"axis", int64_t(1)}}).shape(), (Shape{1, 4, 3, 3}));
  Tensor c = run1("Conv", {x, iota_f32({1, 2, 1, 1}).cast(DType::f16)});
  ASSERT_EQ(c.dtype(), DType::f16);
  // channel 0 * 0 + channel 1 * 1 = the second channel.
  expect_tensor(c, {1, 1, 3, 3}, {4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5});
  Tensor m = run1("MatMul", {iota_f32({2, 2}).cast(DType::bf16), iota_f32({2, 2}).cast(DType::bf16)});
  ASSERT_EQ(m.dtype(), DType::bf16);
  expect_tensor(m, {2, 2}, {2, 3, 6, 11});
  Tensor r = run1("Resize", {x, Tensor(DType::f32, {0}), f32({4}, {1, 1, 2, 2})}, {{"mode", std::string("linear")}});
  EXPECT_EQ(r.dtype(), DType::f16);
  EXPECT_EQ(r.shape(), (Shape{1, 2, 6, 6}));
}
