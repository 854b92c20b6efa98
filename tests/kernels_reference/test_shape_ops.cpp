#include "ref_test_util.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefShape, ReshapeZeroMinusOneAndAllowzero) {
  Tensor x = iota_f32({2, 3, 4});
  EXPECT_EQ(run1("Reshape", {x, i64s({0, -1})}).shape(), (Shape{2, 12}));
  EXPECT_EQ(run1("Reshape", {x, i64s({-1, 4})}).shape(), (Shape{6, 4}));
  expect_tensor(run1("Reshape", {x, i64s({24})}), {24}, values(x));
  Tensor e(DType::f32, {0, 3});
  EXPECT_EQ(run1("Reshape", {e, i64s({3, 0})}, {{"allowzero", int64_t(1)}}).shape(), (Shape{3, 0}));
  EXPECT_EQ(run1("Reshape", {e, i64s({0, 3})}).shape(), (Shape{0, 3}));
  EXPECT_THROW(run1("Reshape", {x, i64s({5, -1})}), Error);
  EXPECT_THROW(run1("Reshape", {x, i64s({-1, -1})}), Error);
}

TEST(RefShape, TransposeDefaultAndPerm) {
  Tensor x = iota_f32({2, 3});
  expect_tensor(run1("Transpose", {x}), {3, 2}, {0, 3, 1, 4, 2, 5});
  Tensor y = iota_f32({2, 1, 3});
  expect_tensor(run1("Transpose", {y}, {{"perm", std::vector<int64_t>{1, 2, 0}}}), {1, 3, 2}, {0, 3, 1, 4, 2, 5});
  EXPECT_THROW(run1("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 0}}}), Error);
}

TEST(RefShape, ConcatAndSplit) {
  Tensor a = iota_f32({2, 1}), b = iota_f32({2, 2}, 1, 10);
  expect_tensor(run1("Concat", {a, b}, {{"axis", int64_t(-1)}}), {2, 3}, {0, 10, 11, 1, 12, 13});
  expect_tensor(run1("Concat", {a, Tensor(DType::f32, {2, 0})}, {{"axis", int64_t(1)}}), {2, 1}, {0, 1});
  EXPECT_THROW(run1("Concat", {a, iota_f32({3, 1})}, {{"axis", int64_t(1)}}), Error);
  auto parts = run_op("Split", {iota_f32({2, 5}), i64s({2, 3})}, {{"axis", int64_t(1)}}, 2);
  expect_tensor(parts[0], {2, 2}, {0, 1, 5, 6});
  expect_tensor(parts[1], {2, 3}, {2, 3, 4, 7, 8, 9});
  auto even = run_op("Split", {iota_f32({4})}, {}, 2);
  expect_tensor(even[1], {2}, {2, 3});
  EXPECT_THROW(run_op("Split", {iota_f32({5})}, {}, 2), Error);
}

TEST(RefShape, SliceNegativeOutOfBoundsAndSteps) {
  Tensor x = iota_f32({10});
  expect_tensor(run1("Slice", {x, i64s({2}), i64s({5})}), {3}, {2, 3, 4});
  expect_tensor(run1("Slice", {x, i64s({-3}), i64s({1000})}), {3}, {7, 8, 9});
  expect_tensor(run1("Slice", {x, i64s({-1}), i64s({INT64_MIN}), i64s({0}), i64s({-3})}), {4}, {9, 6, 3, 0});
  expect_tensor(run1("Slice", {x, i64s({8}), i64s({2})}), {0}, {});
  Tensor m = iota_f32({3, 4});
  expect_tensor(run1("Slice", {m, i64s({1, 0}), i64s({100, 4}), i64s({1, 0}), i64s({2, 2})}), {2, 2}, {1, 3, 9, 11});
  expect_tensor(run1("Slice", {m, i64s({1}), i64s({3}), i64s({-1})}), {3, 2}, {1, 2, 5, 6, 9, 10});
  EXPECT_THROW(run1("Slice", {x, i64s({0}), i64s({1}), i64s({0}), i64s({0})}), Error);
}

TEST(RefShape, GatherAndGatherElements) {
  Tensor x = iota_f32({3, 2});
  expect_tensor(run1("Gather", {x, i64s({2, -3})}), {2, 2}, {4, 5, 0, 1});
  expect_tensor(run1("Gather", {x, i64({}, {1})}, {{"axis", int64_t(1)}}), {3}, {1, 3, 5});
  EXPECT_THROW(run1("Gather", {x, i64s({3})}), Error);
  expect_tensor(run1("GatherElements", {x, i64({3, 1}, {1, 0, -1})}, {{"axis", int64_t(1)}}), {3, 1}, {1, 2, 5});
  expect_tensor(run1("GatherND", {iota_f32({2, 2}), i64({2, 2}, {0, 1, 1, 0})}), {2}, {1, 2});
}

TEST(RefShape, SqueezeUnsqueezeFlatten) {
  Tensor x = iota_f32({1, 3, 1});
  EXPECT_EQ(run1("Squeeze", {x}).shape(), (Shape{3}));
  EXPECT_EQ(run1("Squeeze", {x, i64s({-1})}).shape(), (Shape{1, 3}));
  EXPECT_THROW(run1("Squeeze", {x, i64s({1})}), Error);
  EXPECT_EQ(run1("Unsqueeze", {x, i64s({0, -1})}).shape(), (Shape{1, 1, 3, 1, 1}));
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}).shape(), (Shape{2, 12}));
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}, {{"axis", int64_t(0)}}).shape(), (Shape{1, 24}));
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}, {{"axis", int64_t(-1)}}).shape(), (Shape{6, 4}));
}

TEST(RefShape, ExpandTileShapeSize) {
  expect_tensor(run1("Expand", {f32({2, 1}, {1, 2}), i64s({2, 3})}), {2, 3}, {1, 1, 1, 2, 2, 2});
  EXPECT_EQ(run1("Expand", {f32({3}, {1, 2, 3}), i64s({2, 1, 1})}).shape(), (Shape{2, 1, 3}));
  EXPECT_THROW(run1("Expand", {f32({3}, {1, 2, 3}), i64s({2})}), Error);
  expect_tensor(run1("Tile", {f32({2}, {1, 2}), i64s({3})}), {6}, {1, 2, 1, 2, 1, 2});
  Tensor x = iota_f32({2, 3, 4});
  expect_tensor(run1("Shape", {x}), {3}, {2, 3, 4});
  expect_tensor(run1("Shape", {x}, {{"start", int64_t(-2)}}), {2}, {3, 4});
  expect_tensor(run1("Shape", {x}, {{"start", int64_t(1)}, {"end", int64_t(-1)}}), {1}, {3});
  expect_tensor(run1("Size", {x}), {}, {24});
}

TEST(RefShape, ConstantsAndRange) {
  Tensor v = Tensor::from_vector<int64_t>({1}, {7});
  Tensor c = run1("ConstantOfShape", {i64s({2, 2})}, {{"value", v}});
  EXPECT_EQ(c.dtype(), DType::i64);
  expect_tensor(c, {2, 2}, {7, 7, 7, 7});
  expect_tensor(run1("ConstantOfShape", {i64s({2})}), {2}, {0, 0});
  expect_tensor(run1("Constant", {}, {{"value_floats", std::vector<float>{1, 2}}}), {2}, {1, 2});
  expect_tensor(run1("Constant", {}, {{"value", f32({2}, {3, 4})}}), {2}, {3, 4});
  expect_tensor(run1("Range", {i64({}, {1}), i64({}, {10}), i64({}, {3})}), {3}, {1, 4, 7});
  expect_tensor(run1("Range", {f32({}, {1}), f32({}, {0}), f32({}, {-0.5f})}), {2}, {1, 0.5});
  expect_tensor(run1("Range", {i64({}, {5}), i64({}, {1}), i64({}, {2})}), {0}, {});
  EXPECT_THROW(run1("Range", {i64({}, {0}), i64({}, {1}), i64({}, {0})}), Error);
}

TEST(RefShape, PadModes) {
  Tensor x = f32({1, 3}, {1, 2, 3});
  expect_tensor(run1("Pad", {x, i64s({0, 2, 0, 1}), f32({}, {9})}), {1, 6}, {9, 9, 1, 2, 3, 9});
  expect_tensor(run1("Pad", {x, i64s({0, 2, 0, 2})}, {{"mode", std::string("reflect")}}), {1, 7},
                {3, 2, 1, 2, 3, 2, 1});
  expect_tensor(run1("Pad", {x, i64s({0, 2, 0, 1})}, {{"mode", std::string("edge")}}), {1, 6}, {1, 1, 1, 2, 3, 3});
  expect_tensor(run1("Pad", {x, i64s({0, -1, 0, 0})}), {1, 2}, {2, 3});
}

TEST(RefShape, DepthToSpaceAndBack) {
  Tensor x = iota_f32({1, 8, 1, 1});
  Tensor dcr = run1("DepthToSpace", {x}, {{"blocksize", int64_t(2)}});
  expect_tensor(dcr, {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  Tensor crd = run1("DepthToSpace", {x}, {{"blocksize", int64_t(2)}, {"mode", std::string("CRD")}});
  expect_tensor(crd, {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_tensor(run1("SpaceToDepth", {dcr}, {{"blocksize", int64_t(2)}}), {1, 8, 1, 1}, values(x));
}

TEST(RefShape, EmptyDimsEverywhere) {
  Tensor e(DType::f32, {2, 0, 3});
  EXPECT_EQ(run1("Transpose", {e}).shape(), (Shape{3, 0, 2}));
  EXPECT_EQ(run1("Slice", {e, i64s({0}), i64s({1})}).shape(), (Shape{1, 0, 3}));
  EXPECT_EQ(run1("Gather", {e, i64s({1, 0})}).shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(run1("Gather", {iota_f32({3}), Tensor(DType::i64, {0})}).shape(), (Shape{0}));
  EXPECT_EQ(run1("Expand", {e, i64s({2, 0, 1})}).shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(run1("Tile", {e, i64s({2, 2, 0})}).shape(), (Shape{4, 0, 0}));
  EXPECT_EQ(run1("Pad", {e, i64s({0, 0, 0, 0, 0, 0})}).shape(), (Shape{2, 0, 3}));
}

TEST(RefShape, HostileShapesAreErrorsNotOverflows) {
  const int64_t huge = int64_t(1) << 40;
  EXPECT_THROW(run1("ConstantOfShape", {i64s({huge, huge})}), Error);
  EXPECT_THROW(run1("ConstantOfShape", {i64s({-1})}), Error);
  EXPECT_THROW(run1("Tile", {f32({2}, {1, 2}), i64s({INT64_MAX})}), Error);
  EXPECT_THROW(run1("Expand", {f32({1}, {1}), i64s({huge, huge})}), Error);
  EXPECT_THROW(run1("Range", {f32({}, {0}), f32({}, {1e30f}), f32({}, {1e-30f})}), Error);
  EXPECT_THROW(run1("Resize", {f32({1, 2}, {1, 2}), Tensor(DType::f32, {0}), f32({2}, {1, 1e30f})}), Error);
  EXPECT_THROW(run1("Reshape", {f32({2}, {1, 2}), i64s({-2})}), Error);
  EXPECT_THROW(run1("Gather", {f32({2}, {1, 2}), i64s({0})}, {{"axis", int64_t(3)}}), Error);
  EXPECT_THROW(run1("Concat", {f32({2}, {1, 2})}), Error);  // axis missing
}
