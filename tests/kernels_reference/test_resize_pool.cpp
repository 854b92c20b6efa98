#include "ref_test_util.h"

using namespace segmux;
using namespace segmux::test;

namespace {
Tensor scales(std::vector<float> s) { return f32({int64_t(s.size())}, s); }
Tensor no_roi() { return Tensor(DType::f32, {0}); }
ir::Attrs mode(const std::string& m, const std::string& ctm = "half_pixel") {
  return {{"mode", m}, {"coordinate_transformation_mode", ctm}};
}
}  // namespace

TEST(RefResize, NearestUpsampleByScales) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  expect_tensor(run1("Resize", {x, no_roi(), scales({1, 1, 2, 3})}, mode("nearest")), {1, 1, 4, 6},
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Integer data resizes with nearest too.
  Tensor u = Tensor::from_vector<uint8_t>({1, 2}, {7, 9});
  expect_tensor(run1("Resize", {u, no_roi(), Tensor(), i64s({1, 4})}, mode("nearest", "asymmetric")), {1, 4},
                {7, 7, 9, 9});
}

TEST(RefResize, LinearHalfPixelAndAlignCorners) {
  expect_tensor(run1("Resize", {f32({1, 2}, {1, 2}), no_roi(), scales({1, 2})}, mode("linear")), {1, 4},
                {1, 1.25, 1.75, 2});
  Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_tensor(run1("Resize", {x, no_roi(), scales({1, 1, 0.6f, 0.6f})}, mode("linear")), {1, 1, 1, 2},
                {2.6666665, 4.3333333}, 1e-5);
  expect_tensor(
      run1("Resize", {f32({1, 2}, {1, 2}), no_roi(), Tensor(), i64s({1, 4})}, mode("linear", "align_corners")), {1, 4},
      {1, 4.0 / 3, 5.0 / 3, 2}, 1e-6);
}

TEST(RefResize, CubicKeepsConstantsAndEndpoints) {
  Tensor x = f32({1, 4}, {3, 3, 3, 3});
  expect_tensor(run1("Resize", {x, no_roi(), scales({1, 2})}, mode("cubic")), {1, 8}, std::vector<double>(8, 3.0),
                1e-6);
  // At integer source positions cubic interpolation returns the sample itself.
  Tensor y = run1("Resize", {f32({1, 3}, {1, 5, 2}), no_roi(), Tensor(), i64s({1, 5})}, mode("cubic", "align_corners"));
  EXPECT_NEAR(y.data<float>()[0], 1, 1e-6);
  EXPECT_NEAR(y.data<float>()[2], 5, 1e-6);
  EXPECT_NEAR(y.data<float>()[4], 2, 1e-6);
}

TEST(RefResize, TfCropAndResizeExtrapolates) {
  Tensor x = f32({1, 3}, {10, 20, 30});
  Tensor roi = f32({4}, {0, -0.5f, 1, 1});
  expect_tensor(run1("Resize", {x, roi, Tensor(), i64s({1, 4})},
                     {{"mode", std::string("linear")},
                      {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                      {"extrapolation_value", 99.0f}}),
                {1, 4}, {99, 10, 20, 30});
}

TEST(RefResize, ErrorsAndEmptyOutputs) {
  Tensor x = f32({1, 2}, {1, 2});
  EXPECT_THROW(run1("Resize", {x, no_roi(), scales({1, 2}), i64s({1, 4})}), Error);  // both given
  EXPECT_THROW(run1("Resize", {x, no_roi(), scales({2})}), Error);                   // wrong count
  EXPECT_THROW(run1("Resize", {x, no_roi(), scales({1, 2})}, mode("spline")), Error);
  EXPECT_EQ(run1("Resize", {x, no_roi(), scales({1, 0.4f})}, mode("linear")).shape(), (Shape{1, 0}));
}

TEST(RefResizeAntialias, DownscaleWidensTheTriangleFilter) {
  // torch: F.interpolate([0,1,2,3], size=2, mode="bilinear", antialias=True) = [5/7, 16/7].
  Tensor x = f32({1, 1, 1, 4}, {0, 1, 2, 3});
  expect_tensor(run1("ResizeAntialias", {x}, {{"sizes", std::vector<int64_t>{1, 2}}}, "segmux"), {1, 1, 1, 2},
                {5.0 / 7, 16.0 / 7}, 1e-6);
  // Height works the same way (the second pass).
  expect_tensor(run1("ResizeAntialias", {x.reshaped({1, 1, 4, 1}), i64s({2, 1})}, {}, "segmux"), {1, 1, 2, 1},
                {5.0 / 7, 16.0 / 7}, 1e-6);
}

TEST(RefResizeAntialias, UpscaleIsPlainBilinearHalfPixel) {
  Tensor x = f32({2, 2}, {0, 4, 8, 12});
  Tensor y = run1("ResizeAntialias", {x}, {{"sizes", std::vector<int64_t>{4, 4}}}, "segmux");
  Tensor ref = run1("Resize", {x, no_roi(), Tensor(), i64s({4, 4})}, mode("linear", "pytorch_half_pixel"));
  expect_tensor(y, {4, 4}, values(ref), 1e-5);
}

TEST(RefResizeAntialias, ConstantStaysConstantAndSeparable) {
  Tensor c(DType::f32, {1, 2, 7, 9});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = 0.25f;
  Tensor y = run1("ResizeAntialias", {c}, {{"sizes", std::vector<int64_t>{3, 4}}}, "segmux");
  expect_tensor(y, {1, 2, 3, 4}, std::vector<double>(24, 0.25), 1e-6);
  // An outer product resizes to the outer product of the 1-D resizes.
  std::vector<float> a{1, 3, 2, 5, 4}, b{2, 1, 7, 3, 3, 8, 1};
  Tensor m(DType::f32, {5, 7});
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j) m.data<float>()[i * 7 + j] = a[size_t(i)] * b[size_t(j)];
  Tensor ra = run1("ResizeAntialias", {f32({5, 1}, a)}, {{"sizes", std::vector<int64_t>{2, 1}}}, "segmux");
  Tensor rb = run1("ResizeAntialias", {f32({1, 7}, b)}, {{"sizes", std::vector<int64_t>{1, 3}}}, "segmux");
  Tensor rm = run1("ResizeAntialias", {m}, {{"sizes", std::vector<int64_t>{2, 3}}}, "segmux");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(rm.data<float>()[i * 3 + j], ra.data<float>()[i] * rb.data<float>()[j], 1e-4);
  EXPECT_THROW(run1("ResizeAntialias", {c}, {{"sizes", std::vector<int64_t>{3}}}, "segmux"), Error);
}

TEST(RefRoiAlign, HalfPixelOutputHalfPixelAndMax) {
  Tensor x = iota_f32({1, 1, 4, 4});
  Tensor rois = f32({1, 4}, {0, 0, 4, 4});
  Tensor batch = i64s({0});
  ir::Attrs a{{"output_height", int64_t(2)}, {"output_width", int64_t(2)}, {"sampling_ratio", int64_t(1)}};
  expect_tensor(run1("RoiAlign", {x, rois, batch}, a), {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
  a["coordinate_transformation_mode"] = std::string("output_half_pixel");
  expect_tensor(run1("RoiAlign", {x, rois, batch}, a), {1, 1, 2, 2}, {5, 7, 13, 15});
  a["mode"] = std::string("max");
  expect_tensor(run1("RoiAlign", {x, rois, batch}, a), {1, 1, 2, 2}, {5, 7, 13, 15});
  EXPECT_THROW(run1("RoiAlign", {x, rois, i64s({1})}, a), Error);
  EXPECT_EQ(run1("RoiAlign", {x, Tensor(DType::f32, {0, 4}), Tensor(DType::i64, {0})}, a).shape(), (Shape{0, 1, 2, 2}));
}

TEST(RefPool, MaxPoolWithIndicesAndCeilMode) {
  Tensor x = iota_f32({1, 1, 4, 4});
  auto r = run_op("MaxPool", {x},
                  {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}, 2);
  expect_tensor(r[0], {1, 1, 2, 2}, {5, 7, 13, 15});
  expect_tensor(r[1], {1, 1, 2, 2}, {5, 7, 13, 15});
  Tensor v = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  expect_tensor(
      run1(
          "MaxPool", {v},
          {{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}, {"ceil_mode", int64_t(1)}}),
      {1, 1, 3}, {2, 4, 5});
  expect_tensor(run1("MaxPool", {v}, {{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}}),
                {1, 1, 2}, {2, 4});
  expect_tensor(
      run1("MaxPool", {v}, {{"kernel_shape", std::vector<int64_t>{2}}, {"dilations", std::vector<int64_t>{2}}}),
      {1, 1, 3}, {3, 4, 5});
  EXPECT_THROW(run1("MaxPool", {v}), Error);  // kernel_shape missing
}

TEST(RefPool, AveragePoolCountIncludePad) {
  Tensor x = f32({1, 1, 3}, {1, 2, 3});
  ir::Attrs a{{"kernel_shape", std::vector<int64_t>{2}}, {"pads", std::vector<int64_t>{1, 1}}};
  expect_tensor(run1("AveragePool", {x}, a), {1, 1, 4}, {1, 1.5, 2.5, 3});
  a["count_include_pad"] = int64_t(1);
  expect_tensor(run1("AveragePool", {x}, a), {1, 1, 4}, {0.5, 1.5, 2.5, 1.5});
  expect_tensor(run1("GlobalAveragePool", {iota_f32({1, 2, 2, 2})}), {1, 2, 1, 1}, {1.5, 5.5});
  expect_tensor(run1("GlobalMaxPool", {iota_f32({1, 2, 2, 2})}), {1, 2, 1, 1}, {3, 7});
  expect_tensor(run1("LpPool", {f32({1, 1, 2}, {3, 4})}, {{"kernel_shape", std::vector<int64_t>{2}}}), {1, 1, 1}, {5});
}

TEST(RefMisc, QuantizeDequantize) {
  Tensor x = f32({5}, {0, 1.5f, 2.5f, -1, 300});
  Tensor q = run1("QuantizeLinear", {x, f32({}, {1})});
  ASSERT_EQ(q.dtype(), DType::u8);
  expect_tensor(q, {5}, {0, 2, 2, 0, 255});
  Tensor q8 = run1("QuantizeLinear", {x, f32({}, {2}), Tensor::from_vector<int8_t>({}, {-10})});
  expect_tensor(q8, {5}, {-10, -9, -9, -10, 127});
  expect_tensor(run1("DequantizeLinear", {q8, f32({}, {2}), Tensor::from_vector<int8_t>({}, {-10})}), {5},
                {0, 2, 2, 0, 274});
  // Per-axis scales.
  expect_tensor(run1("DequantizeLinear", {Tensor::from_vector<uint8_t>({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 10})},
                     {{"axis", int64_t(0)}}),
                {2, 2}, {1, 2, 30, 40});
  expect_tensor(
      run1("MatMulInteger", {Tensor::from_vector<uint8_t>({1, 2}, {3, 4}), Tensor::from_vector<uint8_t>({2, 1}, {5, 6}),
                             Tensor::from_vector<uint8_t>({}, {1})}),
      {1, 1}, {2 * 5 + 3 * 6});
}

TEST(RefMisc, NonMaxSuppression) {
  Tensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3});
  Tensor scores = f32({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  Tensor y = run1("NonMaxSuppression", {boxes, scores, i64s({3}), f32({1}, {0.5f})});
  expect_tensor(y, {2, 3}, {0, 0, 0, 0, 0, 2});
  EXPECT_EQ(run1("NonMaxSuppression", {boxes, scores}).shape(), (Shape{0, 3}));  // max boxes defaults to 0
}

TEST(RefMisc, GridSampleIdentityAndPadding) {
  Tensor x = iota_f32({1, 1, 2, 2});
  Tensor grid = f32({1, 2, 2, 2}, {-1, -1, 1, -1, -1, 1, 1, 1});
  expect_tensor(run1("GridSample", {x, grid}, {{"align_corners", int64_t(1)}}), {1, 1, 2, 2}, {0, 1, 2, 3});
  // Without align_corners the corners sample half a pixel outside: zeros padding averages in zeros.
  expect_tensor(run1("GridSample", {x, grid}), {1, 1, 2, 2}, {0, 0.25, 0.5, 0.75});
  expect_tensor(run1("GridSample", {x, grid}, {{"padding_mode", std::string("border")}}), {1, 1, 2, 2}, {0, 1, 2, 3});
}

TEST(RefMisc, LrnDetUniqueBitShiftWindows) {
  expect_tensor(
      run1("LRN", {f32({1, 2, 1, 1}, {1, 2})}, {{"size", int64_t(2)}, {"alpha", 2.0f}, {"beta", 1.0f}, {"bias", 1.0f}}),
      {1, 2, 1, 1}, {1.0 / (1 + 1.0 * 5), 2.0 / (1 + 1.0 * 4)});
  expect_tensor(run1("Det", {f32({2, 2}, {1, 2, 3, 4})}), {}, {-2}, 1e-9);
  auto u = run_op("Unique", {f32({4}, {2, 1, 1, 3})}, {}, 4);
  expect_tensor(u[0], {3}, {1, 2, 3});
  expect_tensor(u[1], {3}, {1, 0, 3});
  expect_tensor(u[2], {4}, {1, 0, 0, 2});
  expect_tensor(u[3], {3}, {2, 1, 1});
  auto uu = run_op("Unique", {f32({4}, {2, 1, 1, 3})}, {{"sorted", int64_t(0)}}, 1);
  expect_tensor(uu[0], {3}, {2, 1, 3});
  expect_tensor(
      run1("BitShift", {Tensor::from_vector<uint8_t>({2}, {1, 128}), Tensor::from_vector<uint8_t>({2}, {3, 1})},
           {{"direction", std::string("LEFT")}}),
      {2}, {8, 0});
  expect_tensor(run1("HannWindow", {i64({}, {4})}), {4}, {0, 0.5, 1, 0.5}, 1e-6);
}

TEST(RefMisc, LossesWithWeightsAndIgnoreIndex) {
  // log-probabilities for 2 samples, 2 classes.
  Tensor lp = f32({2, 2}, {-1, -2, -3, -4});
  Tensor t = i64s({1, 0});
  expect_tensor(run1("NegativeLogLikelihoodLoss", {lp, t}), {}, {(2 + 3) / 2.0});
  expect_tensor(run1("NegativeLogLikelihoodLoss", {lp, t}, {{"reduction", std::string("none")}}), {2}, {2, 3});
  expect_tensor(run1("NegativeLogLikelihoodLoss", {lp, t, f32({2}, {1, 3})}), {}, {(3 * 2 + 1 * 3) / 4.0});
  expect_tensor(run1("NegativeLogLikelihoodLoss", {lp, t}, {{"ignore_index", int64_t(0)}}), {}, {2});
  EXPECT_THROW(run1("NegativeLogLikelihoodLoss", {lp, i64s({2, 0})}), Error);
  auto ce = run_op("SoftmaxCrossEntropyLoss", {f32({1, 2}, {0, 0}), i64s({1})}, {}, 2);
  expect_tensor(ce[0], {}, {std::log(2.0)});
  expect_tensor(ce[1], {1, 2}, {-std::log(2.0), -std::log(2.0)});
}

// Found by fuzz_onnx_run: sizes [1, 0, 3, ~1e12] make an empty output whose last axis is still huge;
// the kernel built its per-axis tap tables (one entry per output index) before seeing the output is
// empty, and asked for terabytes.
TEST(RefResize, EmptyOutputWithAHugeAxisAllocatesNothing) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const int64_t huge = int64_t(1) << 40;
  for (const char* m : {"nearest", "linear", "cubic"}) {
    Tensor y = run1("Resize", {x, no_roi(), Tensor(), i64s({1, 0, 3, huge})}, mode(m));
    EXPECT_EQ(y.shape(), (Shape{1, 0, 3, huge})) << m;
  }
}
