#include "ref_test_util.h"

#include "ir/schemas/schemas.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefElementwise, AddBroadcastsBothWays) {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({3}, {10, 20, 30});
  expect_tensor(run1("Add", {a, b}), {2, 3}, {11, 21, 31, 12, 22, 32});
}

TEST(RefElementwise, SubMulDivPow) {
  Tensor a = f32({3}, {6, -4, 9});
  Tensor b = f32({3}, {2, 2, 3});
  expect_tensor(run1("Sub", {a, b}), {3}, {4, -6, 6});
  expect_tensor(run1("Mul", {a, b}), {3}, {12, -8, 27});
  expect_tensor(run1("Div", {a, b}), {3}, {3, -2, 3});
  expect_tensor(run1("Pow", {a, f32({}, {2})}), {3}, {36, 16, 81});
  // Integer Pow with an i64 exponent, and a float base with an int exponent.
  expect_tensor(run1("Pow", {i64s({2, -3}), i64s({10, 3})}), {2}, {1024, -27});
  expect_tensor(run1("Pow", {f32({1}, {1.5f}), i64s({2})}), {1}, {2.25});
}

TEST(RefElementwise, IntegerDivTruncatesAndDivByZeroIsAnError) {
  expect_tensor(run1("Div", {i64s({7, -7}), i64s({2, 2})}), {2}, {3, -3});
  EXPECT_THROW(run1("Div", {i64s({1}), i64s({0})}), Error);
}

TEST(RefElementwise, ModFollowsDivisorSignUnlessFmod) {
  expect_tensor(run1("Mod", {i64s({-7, 7, -7}), i64s({3, -3, -3})}), {3}, {2, -2, -1});
  expect_tensor(run1("Mod", {f32({2}, {-7, 7}), f32({2}, {3, 3})}, {{"fmod", int64_t(1)}}), {2}, {-1, 1});
}

TEST(RefElementwise, UnaryMath) {
  Tensor x = f32({4}, {-1.5f, 0, 0.5f, 2.5f});
  expect_tensor(run1("Relu", {x}), {4}, {0, 0, 0.5, 2.5});
  expect_tensor(run1("Abs", {x}), {4}, {1.5, 0, 0.5, 2.5});
  expect_tensor(run1("Neg", {x}), {4}, {1.5, 0, -0.5, -2.5});
  expect_tensor(run1("Floor", {x}), {4}, {-2, 0, 0, 2});
  expect_tensor(run1("Ceil", {x}), {4}, {-1, 0, 1, 3});
  expect_tensor(run1("Round", {x}), {4}, {-2, 0, 0, 2});  // halves to even
  expect_tensor(run1("Sign", {x}), {4}, {-1, 0, 1, 1});
  expect_tensor(run1("Sigmoid", {x}), {4},
                {1 / (1 + std::exp(1.5)), 0.5, 1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-2.5))});
  expect_tensor(run1("Erf", {x}), {4}, {std::erf(-1.5), 0, std::erf(0.5), std::erf(2.5)});
  expect_tensor(run1("Tanh", {x}), {4}, {std::tanh(-1.5), 0, std::tanh(0.5), std::tanh(2.5)});
  expect_tensor(run1("Sqrt", {f32({2}, {4, 2})}), {2}, {2, std::sqrt(2.0)});
  expect_tensor(run1("Exp", {f32({1}, {1})}), {1}, {std::exp(1.0)});
  expect_tensor(run1("Log", {f32({1}, {2})}), {1}, {std::log(2.0)});
  expect_tensor(run1("Reciprocal", {f32({1}, {4})}), {1}, {0.25});
  expect_tensor(run1("Sin", {f32({1}, {1})}), {1}, {std::sin(1.0)});
  expect_tensor(run1("Cos", {f32({1}, {1})}), {1}, {std::cos(1.0)});
  expect_tensor(run1("Abs", {i64s({-3, 4})}), {2}, {3, 4});
  EXPECT_THROW(run1("Sqrt", {i64s({4})}), Error);
}

TEST(RefElementwise, Activations) {
  Tensor x = f32({3}, {-2, 0, 3});
  expect_tensor(run1("LeakyRelu", {x}, {{"alpha", 0.1f}}), {3}, {-0.2, 0, 3}, 1e-6);
  expect_tensor(run1("Elu", {x}), {3}, {std::expm1(-2.0), 0, 3});
  expect_tensor(run1("HardSigmoid", {x}), {3}, {0.1, 0.5, 1}, 1e-6);
  expect_tensor(run1("Softplus", {x}), {3},
                {std::log1p(std::exp(-2.0)), std::log(2.0), 3 + std::log1p(std::exp(-3.0))});
  expect_tensor(run1("PRelu", {f32({2, 2}, {-1, 1, -2, 2}), f32({2, 1}, {0.5f, 0.25f})}), {2, 2}, {-0.5, 1, -0.5, 2});
  expect_tensor(run1("Selu", {f32({1}, {1})}), {1}, {1.05070102214813232421875}, 1e-6);
  expect_tensor(run1("Celu", {f32({1}, {-1})}), {1}, {std::expm1(-1.0)});
  expect_tensor(run1("HardSwish", {f32({2}, {1, 4})}), {2}, {1 * (1.0 / 6 + 0.5), 4});
}

TEST(RefElementwise, ClipWithOptionalBounds) {
  Tensor x = f32({4}, {-5, 0, 5, 10});
  expect_tensor(run1("Clip", {x, f32({}, {-1}), f32({}, {6})}), {4}, {-1, 0, 5, 6});
  expect_tensor(run1("Clip", {x, Tensor(), f32({}, {6})}), {4}, {-5, 0, 5, 6});
  expect_tensor(run1("Clip", {x}), {4}, {-5, 0, 5, 10});
}

TEST(RefElementwise, ComparisonsAndLogic) {
  Tensor a = i64s({1, 2, 3});
  Tensor b = i64({1}, {2});
  expect_tensor(run1("Equal", {a, b}), {3}, {0, 1, 0});
  expect_tensor(run1("Less", {a, b}), {3}, {1, 0, 0});
  expect_tensor(run1("Greater", {a, b}), {3}, {0, 0, 1});
  expect_tensor(run1("LessOrEqual", {a, b}), {3}, {1, 1, 0});
  expect_tensor(run1("GreaterOrEqual", {a, b}), {3}, {0, 1, 1});
  EXPECT_EQ(run1("Equal", {a, b}).dtype(), DType::boolean);
  Tensor p = b8({4}, {true, true, false, false}), q = b8({4}, {true, false, true, false});
  expect_tensor(run1("And", {p, q}), {4}, {1, 0, 0, 0});
  expect_tensor(run1("Or", {p, q}), {4}, {1, 1, 1, 0});
  expect_tensor(run1("Xor", {p, q}), {4}, {0, 1, 1, 0});
  expect_tensor(run1("Not", {p}), {4}, {0, 0, 1, 1});
  EXPECT_THROW(run1("And", {a, a}), Error);
}

TEST(RefElementwise, WhereBroadcastsThreeWays) {
  Tensor c = b8({2, 1}, {true, false});
  expect_tensor(run1("Where", {c, f32({3}, {1, 2, 3}), f32({}, {-1})}), {2, 3}, {1, 2, 3, -1, -1, -1});
}

TEST(RefElementwise, VariadicSumMeanMinMax) {
  Tensor a = f32({2}, {1, 5}), b = f32({2, 1}, {3, -1}), c = f32({}, {2});
  expect_tensor(run1("Sum", {a, b, c}), {2, 2}, {6, 10, 2, 6});
  expect_tensor(run1("Mean", {a, b, c}), {2, 2}, {2, 10.0 / 3, 2.0 / 3, 2});
  expect_tensor(run1("Max", {a, b, c}), {2, 2}, {3, 5, 2, 5});
  expect_tensor(run1("Min", {a, b, c}), {2, 2}, {1, 2, -1, -1});
  expect_tensor(run1("Max", {f32({2}, {NAN, 1}), f32({2}, {0, 2})}), {2}, {NAN, 2});
}

TEST(RefElementwise, CastRoundsToNearestEvenAndIntsExactly) {
  // 1 + 2^-8 is a tie between two bf16 values; ties go to even (1.0).
  Tensor x = f32({3}, {1.00390625f, 1.01171875f, -2.5f});
  Tensor bf = run1("Cast", {x}, {{"to", int64_t(16)}});
  ASSERT_EQ(bf.dtype(), DType::bf16);
  EXPECT_EQ(bf.data<uint16_t>()[0], 0x3f80);
  EXPECT_EQ(bf.data<uint16_t>()[1], 0x3f82);
  Tensor h = run1("Cast", {x}, {{"to", int64_t(10)}});
  ASSERT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.data<uint16_t>()[0], f32_to_f16(1.00390625f));
  expect_tensor(run1("Cast", {bf}, {{"to", int64_t(1)}}), {3}, {1.0, 1.015625, -2.5});
  // i64 values above 2^53 survive i64 -> i64-ish casts exactly (no trip through double).
  const int64_t big = (int64_t(1) << 60) + 1;
  Tensor i = run1("Cast", {Tensor::from_vector<int64_t>({1}, {big})}, {{"to", int64_t(7)}});
  EXPECT_EQ(i.data<int64_t>()[0], big);
  Tensor i32 = run1("Cast", {Tensor::from_vector<int64_t>({1}, {big})}, {{"to", int64_t(6)}});
  EXPECT_EQ(i32.data<int32_t>()[0], 1);
  expect_tensor(run1("Cast", {f32({3}, {-2.7f, 0.0f, 3.9f})}, {{"to", int64_t(7)}}), {3}, {-2, 0, 3});
  expect_tensor(run1("Cast", {f32({3}, {-2.7f, 0.0f, NAN})}, {{"to", int64_t(9)}}), {3}, {1, 0, 1});
  expect_tensor(run1("Cast", {b8({2}, {true, false})}, {{"to", int64_t(1)}}), {2}, {1, 0});
  EXPECT_THROW(run1("Cast", {x}, {{"to", int64_t(8)}}), Error);  // string
}

TEST(RefElementwise, SixteenBitFloatsComputeInF32AndRound) {
  Tensor a = f32({2}, {1.0f, 3.0f}).cast(DType::bf16);
  Tensor b = f32({2}, {0.00390625f, 0.5f}).cast(DType::bf16);
  Tensor y = run1("Add", {a, b});
  ASSERT_EQ(y.dtype(), DType::bf16);
  expect_tensor(y, {2}, {1.0, 3.5});  // 1 + 2^-8 rounds to 1 in bf16
  Tensor h = run1("Mul", {f32({1}, {1.5f}).cast(DType::f16), f32({1}, {2.0f}).cast(DType::f16)});
  ASSERT_EQ(h.dtype(), DType::f16);
  expect_tensor(h, {1}, {3.0});
}

TEST(RefElementwise, EmptyTensorsWork) {
  Tensor e(DType::f32, {0, 3});
  EXPECT_EQ(run1("Add", {e, f32({3}, {1, 2, 3})}).shape(), (Shape{0, 3}));
  EXPECT_EQ(run1("Relu", {e}).shape(), (Shape{0, 3}));
  EXPECT_EQ(run1("Where", {Tensor(DType::boolean, {0, 1}), e, f32({}, {1})}).shape(), (Shape{0, 3}));
  EXPECT_EQ(run1("Cast", {e}, {{"to", int64_t(16)}}).shape(), (Shape{0, 3}));
}

TEST(RefElementwise, BadInputsAreErrorsNamingTheNode) {
  try {
    run1("Add", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test_Add"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run1("Add", {f32({1}, {1}), i64s({1})}), Error);
  EXPECT_THROW(run1("Add", {f32({1}, {1})}), Error);  // arity
}

TEST(RefElementwise, IsNaNIsInfIdentityDropout) {
  Tensor x = f32({3}, {NAN, INFINITY, -INFINITY});
  expect_tensor(run1("IsNaN", {x}), {3}, {1, 0, 0});
  expect_tensor(run1("IsInf", {x}), {3}, {0, 1, 1});
  expect_tensor(run1("IsInf", {x}, {{"detect_negative", int64_t(0)}}), {3}, {0, 1, 0});
  expect_tensor(run1("Identity", {f32({2}, {1, 2})}), {2}, {1, 2});
  auto d = run_op("Dropout", {f32({2}, {1, 2})}, {}, 2);
  expect_tensor(d[0], {2}, {1, 2});
  expect_tensor(d[1], {2}, {1, 1});
}

TEST(RefElementwise, OnnxDtypeNumbers) {
  DType t;
  ASSERT_TRUE(ir::dtype_from_onnx(16, &t));
  EXPECT_EQ(t, DType::bf16);
  EXPECT_EQ(ir::dtype_to_onnx(DType::i64), 7);
  EXPECT_FALSE(ir::dtype_from_onnx(8, &t));
}
