#include "ref_test_util.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefLinalg, MatMul2DAndVectors) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_tensor(run1("MatMul", {a, b}), {2, 2}, {58, 64, 139, 154});
  expect_tensor(run1("MatMul", {f32({3}, {1, 2, 3}), b}), {2}, {58, 64});
  expect_tensor(run1("MatMul", {a, f32({3}, {1, 0, -1})}), {2}, {-2, -2});
  expect_tensor(run1("MatMul", {f32({3}, {1, 2, 3}), f32({3}, {1, 1, 1})}), {}, {6});
  EXPECT_THROW(run1("MatMul", {a, a}), Error);
}

TEST(RefLinalg, MatMulBatchBroadcast) {
  Tensor a = iota_f32({2, 1, 2, 2});              // two batches
  Tensor b = f32({3, 2, 1}, {1, 0, 0, 1, 1, 1});  // three batches
  Tensor y = run1("MatMul", {a, b});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2, 1}));
  // batch (1, 2): a = [[4,5],[6,7]], b = [1,1] -> [9, 13]
  EXPECT_EQ(y.data<float>()[(1 * 3 + 2) * 2 + 0], 9);
  EXPECT_EQ(y.data<float>()[(1 * 3 + 2) * 2 + 1], 13);
  EXPECT_EQ(run1("MatMul", {Tensor(DType::f32, {0, 3}), b.reshaped({3, 2})}).shape(), (Shape{0, 2}));
  expect_tensor(run1("MatMul", {Tensor(DType::f32, {2, 0}), Tensor(DType::f32, {0, 2})}), {2, 2}, {0, 0, 0, 0});
  expect_tensor(run1("MatMul", {i64({1, 2}, {2, 3}), i64({2, 1}, {4, 5})}), {1, 1}, {23});
}

TEST(RefLinalg, GemmTransposesAlphaBetaBias) {
  Tensor a = f32({3, 2}, {1, 4, 2, 5, 3, 6});     // A^T of [[1,2,3],[4,5,6]]
  Tensor b = f32({2, 3}, {7, 9, 11, 8, 10, 12});  // B^T of [[7,8],[9,10],[11,12]]
  Tensor c = f32({2}, {1, -1});
  expect_tensor(
      run1("Gemm", {a, b, c}, {{"transA", int64_t(1)}, {"transB", int64_t(1)}, {"alpha", 0.5f}, {"beta", 2.0f}}),
      {2, 2}, {31, 30, 71.5, 75});
  expect_tensor(run1("Gemm", {f32({1, 1}, {2}), f32({1, 1}, {3})}), {1, 1}, {6});
}

TEST(RefLinalg, Conv2DPadsStridesDilationsGroups) {
  Tensor x = iota_f32({1, 1, 3, 3});
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_tensor(run1("Conv", {x, w}), {1, 1, 2, 2}, {8, 12, 20, 24});
  expect_tensor(run1("Conv", {x, w, f32({1}, {1})},
                     {{"pads", std::vector<int64_t>{1, 1, 0, 0}}, {"strides", std::vector<int64_t>{2, 2}}}),
                {1, 1, 2, 2}, {1, 4, 10, 25});
  expect_tensor(run1("Conv", {x, w}, {{"dilations", std::vector<int64_t>{2, 2}}}), {1, 1, 1, 1}, {16});
  expect_tensor(run1("Conv", {x, w}, {{"auto_pad", std::string("SAME_UPPER")}}), {1, 1, 3, 3},
                {8, 12, 7, 20, 24, 13, 13, 15, 8});
  expect_tensor(run1("Conv", {x, w}, {{"auto_pad", std::string("SAME_LOWER")}}), {1, 1, 3, 3},
                {0, 1, 3, 3, 8, 12, 9, 20, 24});
  // Depthwise: two channels, each with its own 1x1 weight.
  Tensor x2 = iota_f32({1, 2, 1, 2});
  expect_tensor(run1("Conv", {x2, f32({2, 1, 1, 1}, {2, -1})}, {{"group", int64_t(2)}}), {1, 2, 1, 2}, {0, 2, -2, -3});
  EXPECT_THROW(run1("Conv", {x2, f32({2, 1, 1, 1}, {2, -1})}), Error);  // channel mismatch without group
}

TEST(RefLinalg, Conv1DAnd3D) {
  expect_tensor(run1("Conv", {f32({1, 1, 4}, {1, 2, 3, 4}), f32({1, 1, 2}, {1, -1})}), {1, 1, 3}, {-1, -1, -1});
  Tensor x = iota_f32({1, 1, 2, 2, 2});
  expect_tensor(run1("Conv", {x, f32({1, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1})}), {1, 1, 1, 1, 1}, {28});
}

TEST(RefLinalg, ConvTransposeStridesPadsOutputPaddingGroups) {
  Tensor x = f32({1, 1, 2}, {1, 2});
  Tensor w = f32({1, 1, 3}, {1, 1, 1});
  expect_tensor(run1("ConvTranspose", {x, w}), {1, 1, 4}, {1, 3, 3, 2});
  expect_tensor(run1("ConvTranspose", {x, w}, {{"strides", std::vector<int64_t>{2}}}), {1, 1, 5}, {1, 1, 3, 2, 2});
  expect_tensor(run1("ConvTranspose", {x, w},
                     {{"strides", std::vector<int64_t>{2}}, {"output_padding", std::vector<int64_t>{1}}}),
                {1, 1, 6}, {1, 1, 3, 2, 2, 0});
  expect_tensor(
      run1("ConvTranspose", {x, w}, {{"strides", std::vector<int64_t>{2}}, {"pads", std::vector<int64_t>{1, 1}}}),
      {1, 1, 3}, {1, 3, 2});
  expect_tensor(run1("ConvTranspose", {x, w, f32({1}, {10})},
                     {{"strides", std::vector<int64_t>{2}}, {"output_shape", std::vector<int64_t>{4}}}),
                {1, 1, 4}, {11, 13, 12, 12});
  // 2-D, stride 2, kernel 2: each input pixel paints a 2x2 block.
  Tensor x2 = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w2 = f32({1, 2, 2, 2}, {1, 1, 1, 1, 0, 0, 0, 1});
  Tensor y2 = run1("ConvTranspose", {x2, w2}, {{"strides", std::vector<int64_t>{2, 2}}});
  ASSERT_EQ(y2.shape(), (Shape{1, 2, 4, 4}));
  expect_tensor(y2, {1, 2, 4, 4},
                {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4});
}

TEST(RefLinalg, EinsumForms) {
  Tensor a = iota_f32({2, 3});
  Tensor b = iota_f32({3, 2});
  expect_tensor(run1("Einsum", {a, b}, {{"equation", std::string("ij,jk->ik")}}), {2, 2}, {10, 13, 28, 40});
  expect_tensor(run1("Einsum", {a}, {{"equation", std::string("ij->ji")}}), {3, 2}, {0, 3, 1, 4, 2, 5});
  expect_tensor(run1("Einsum", {a}, {{"equation", std::string("ij->")}}), {}, {15});
  expect_tensor(run1("Einsum", {iota_f32({2, 2})}, {{"equation", std::string("ii")}}), {}, {3});
  expect_tensor(run1("Einsum", {a, b}, {{"equation", std::string("ij,jk")}}), {2, 2}, {10, 13, 28, 40});
  Tensor q = iota_f32({2, 1, 2});
  Tensor k = iota_f32({2, 3, 2});
  Tensor s = run1("Einsum", {q, k}, {{"equation", std::string("...qd,...kd->...qk")}});
  expect_tensor(s, {2, 1, 3}, {1, 3, 5, 33, 43, 53});
  EXPECT_THROW(run1("Einsum", {a, a}, {{"equation", std::string("ij,jk->ik")}}), Error);
}
