// oneDNN-backed kernels (MatMul, Gemm, segmux Linear, Conv, ConvTranspose) vs the reference kernels.
// f32 tolerance: |err| <= 2e-6 * sqrt(K) absolute + 1e-5 relative (K = reduction length; inputs in
// [-1, 1]), i.e. a few ulps of accumulated rounding in a different summation order.
// bf16: the reference runs on inputs rounded to bf16 (products are then exact in f32, so the only
// difference is f32 accumulation order): same tolerance. Against unrounded inputs bf16 would differ
// by ~2^-8 relative per product, which is what the precision choice costs, not a kernel error.
#include "harness.h"
#include "ir/precision.h"
#include "kernels/cpu/cpu_kernels.h"

namespace segmux::testing_cpu {
namespace {

double tol_k(int64_t k) { return 2e-6 * std::sqrt(double(std::max<int64_t>(k, 1))); }

TEST(CpuMatMul, ConstantWeightOddShapes) {
  const std::vector<std::tuple<Shape, int64_t>> cases = {{{1, 1}, 1},          {{3, 17}, 63},  {{65, 127}, 129},
                                                         {{2, 3, 17, 33}, 16}, {{1, 1024}, 7}, {{129, 1}, 65},
                                                         {{0, 5}, 3},          {{3, 0}, 4}};
  uint32_t seed = 100;
  for (auto& [as, n] : cases) {
    const int64_t k = as.back();
    Tensor a = random_tensor(as, seed++), w = random_tensor({k, n}, seed++);
    const std::string label = "matmul " + shape_str(as) + " x [" + std::to_string(k) + "," + std::to_string(n) + "]";
    expect_matches_reference(make_node("MatMul"), {{a}, {w, true}}, tol_k(k), 1e-5, label);
    // bf16 compute vs the reference on bf16-rounded operands.
    ir::Node nb = make_node("MatMul", {{"segmux_precision", std::string("bf16")}});
    bool handled = false;
    auto got = run_node(cpu_provider(), nb, {{a}, {w, true}}, 2, &handled);
    ASSERT_TRUE(handled) << label;
    auto want = run_node(reference_provider(), make_node("MatMul"), {{bf16_rounded(a)}, {bf16_rounded(w), true}});
    EXPECT_TRUE(close(got[0], want[0], tol_k(k), 1e-5)) << label << " bf16";
  }
}

TEST(CpuMatMul, PlansForNewRowCountsReuseThePackedWeight) {
  ir::Node n = make_node("MatMul");
  Tensor w = random_tensor({33, 40}, 5);
  // Same kernel object, several M: run through the harness twice with different A (new kernels), and
  // once through one kernel with two shapes.
  std::vector<ir::TensorType> types = {{DType::f32, {4, 33}, true}, {DType::f32, {33, 40}, true}};
  n.inputs = {0, 1};
  KernelInit init{n, {&types[0], &types[1]}, {nullptr, &w}, {{DType::f32, {4, 40}, true}}, 2};
  auto k = cpu_provider().make(init);
  ASSERT_TRUE(k);
  EXPECT_GT(k->prepacked_bytes(), 0u);
  for (int64_t m : {4, 9, 1, 4}) {
    Tensor a = random_tensor({m, 33}, uint32_t(m)), y(DType::f32, {m, 40});
    std::vector<const Tensor*> in = {&a, &w};
    std::vector<Tensor*> out = {&y};
    KernelContext ctx{n, in, out, 2};
    k->run(ctx);
    auto want = run_node(reference_provider(), make_node("MatMul"), {{a}, {w, true}});
    EXPECT_TRUE(close(y, want[0], tol_k(33), 1e-5)) << "M=" << m;
  }
}

TEST(CpuMatMul, BatchedAndBroadcastOperands) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{2, 5, 7}, {2, 7, 4}},        {{2, 1, 5, 7}, {3, 7, 4}},
                                                      {{3, 17, 65}, {65, 129}},      {{1, 3, 16, 64}, {1, 3, 64, 17}},
                                                      {{4, 2, 9, 3}, {4, 1, 3, 11}}, {{2, 0, 3}, {2, 3, 5}}};
  uint32_t seed = 200;
  for (auto& [as, bs] : cases) {
    Tensor a = random_tensor(as, seed++), b = random_tensor(bs, seed++);
    expect_matches_reference(make_node("MatMul"), {{a}, {b}}, tol_k(as.back()), 1e-5,
                             "batched matmul " + shape_str(as) + " x " + shape_str(bs));
  }
}

TEST(CpuMatMul, VectorOperandsAreLeftToTheReference) {
  bool handled = true;
  run_node(cpu_provider(), make_node("MatMul"), {{random_tensor({5}, 1)}, {random_tensor({5, 3}, 2), true}}, 2,
           &handled);
  EXPECT_FALSE(handled);
}

TEST(CpuGemm, TransposesAlphaBetaAndBiasShapes) {
  struct Case {
    int64_t m, k, n;
    int64_t ta, tb;
    float alpha, beta;
    Shape c;  // empty vector with c_none = no C
    bool c_none, c_const;
  };
  const std::vector<Case> cases = {
      {3, 17, 63, 0, 1, 1.f, 1.f, {63}, false, true},       {65, 33, 17, 0, 0, 1.f, 1.f, {1, 17}, false, true},
      {5, 7, 9, 1, 0, 1.f, 1.f, {}, true, false},           {5, 7, 9, 1, 1, 0.5f, 2.f, {5, 9}, false, true},
      {17, 16, 33, 0, 1, 1.f, 0.25f, {17, 1}, false, true}, {4, 8, 3, 0, 0, 1.f, 1.f, {}, false, true},
      {6, 10, 12, 0, 1, 1.f, 1.f, {6, 12}, false, false},   {1, 1, 1, 0, 0, 2.f, 1.f, {1}, false, true}};
  uint32_t seed = 300;
  for (auto& c : cases) {
    Tensor a = random_tensor(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, seed++);
    Tensor b = random_tensor(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed++);
    std::vector<Input> in = {{a}, {b, true}};
    if (!c.c_none) in.push_back({random_tensor(c.c, seed++), c.c_const});
    ir::Node n = make_node("Gemm", {{"transA", c.ta}, {"transB", c.tb}, {"alpha", c.alpha}, {"beta", c.beta}});
    const std::string label = "gemm m" + std::to_string(c.m) + " k" + std::to_string(c.k) + " n" + std::to_string(c.n) +
                              " C" + (c.c_none ? std::string("-") : shape_str(c.c));
    expect_matches_reference(n, in, tol_k(c.k) * 2, 1e-5, label);
  }
}

TEST(CpuLinear, BiasActivationAndResidual) {
  uint32_t seed = 400;
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{3, 17, 63}, {65, 64, 129}, {1, 5, 1}}) {
    Tensor a = random_tensor({2, m, k}, seed++), w = random_tensor({k, n}, seed++), b = random_tensor({n}, seed++);
    Tensor r = random_tensor({2, m, n}, seed++);
    const std::string label = "linear m" + std::to_string(m) + " k" + std::to_string(k) + " n" + std::to_string(n);
    expect_matches_reference(make_node("Linear", {}, "segmux"), {{a}, {w, true}, {b, true}}, tol_k(k), 1e-5, label);
    expect_matches_reference(make_node("Linear", {{"activation", std::string("gelu")}}, "segmux"),
                             {{a}, {w, true}, {b, true}}, tol_k(k), 1e-5, label + " gelu");
    expect_matches_reference(make_node("Linear", {{"activation", std::string("gelu")}}, "segmux"),
                             {{a}, {w, true}, {b}, {r}}, tol_k(k), 1e-5, label + " gelu runtime bias + residual");
    expect_matches_reference(make_node("Linear", {}, "segmux"), {{a}, {w, true}, {Tensor(), false, true}, {r}},
                             tol_k(k), 1e-5, label + " residual only");
    // ReLU before the residual (the oneDNN post-ops in that order).
    expect_matches_reference(make_node("Linear", {{"activation", std::string("relu")}}, "segmux"),
                             {{a}, {w, true}, {b}, {r}}, tol_k(k), 1e-5, label + " relu runtime bias + residual");
  }
}

// bf16 activations (the bf16 build's fc1 -> fc2, compiler pass bf16-between-linears): a bf16 input is
// what the f32 input becomes inside the kernel, and a bf16 output the f32 one rounded, bit for bit (the
// pass relies on both); against the reference within one bf16 rounding of the output.
TEST(CpuLinear, Bf16InputAndOutputAreTheRoundedF32Run) {
  uint32_t seed = 450;
  const ir::Attrs bf16 = {{ir::kPrecisionAttr, std::string(ir::kPrecisionBf16)}};
  ir::Attrs bf16_out = bf16, bf16_out_gelu = bf16;
  bf16_out[ir::kLinearBf16Output] = int64_t(1);
  bf16_out_gelu[ir::kLinearBf16Output] = int64_t(1);
  bf16_out_gelu["activation"] = std::string("gelu");
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{3, 17, 63}, {65, 64, 129}, {1, 5, 1}}) {
    Tensor a = random_tensor({2, m, k}, seed++), w = random_tensor({k, n}, seed++), b = random_tensor({n}, seed++);
    Tensor r = random_tensor({2, m, n}, seed++);
    const Tensor a16 = a.cast(DType::bf16);
    const std::string label = "linear m" + std::to_string(m) + " k" + std::to_string(k) + " n" + std::to_string(n);
    for (const ir::Attrs& attrs : {bf16_out, bf16_out_gelu}) {
      ir::Attrs f32_out = attrs;
      f32_out.erase(ir::kLinearBf16Output);
      const std::vector<Input> in = {{a}, {w, true}, {b, true}, {r}};
      auto f32_run = run_node(cpu_provider(), make_node("Linear", f32_out, "segmux"), in);
      auto out16 = run_node(cpu_provider(), make_node("Linear", attrs, "segmux"), in);
      auto in16 = run_node(cpu_provider(), make_node("Linear", f32_out, "segmux"), {{a16}, {w, true}, {b, true}, {r}});
      auto both16 = run_node(cpu_provider(), make_node("Linear", attrs, "segmux"), {{a16}, {w, true}, {b, true}, {r}});
      ASSERT_EQ(out16.size(), 1u) << label;
      ASSERT_EQ(both16.size(), 1u) << label;
      ASSERT_EQ(out16[0].dtype(), DType::bf16) << label;
      EXPECT_TRUE(out16[0].identical(f32_run[0].cast(DType::bf16))) << label << " bf16 output";
      EXPECT_TRUE(in16[0].identical(f32_run[0])) << label << " bf16 input";
      EXPECT_TRUE(both16[0].identical(out16[0])) << label << " bf16 input and output";
      // The reference on the rounded values (it ignores the precision, honours bf16_output).
      ir::Attrs ref_attrs = attrs;
      ref_attrs.erase(ir::kPrecisionAttr);
      auto want = run_node(reference_provider(), make_node("Linear", ref_attrs, "segmux"),
                           {{a16}, {bf16_rounded(w), true}, {b, true}, {r}}, 1);
      ASSERT_EQ(want[0].dtype(), DType::bf16) << label;
      EXPECT_TRUE(close(both16[0], want[0], tol_k(k), 1.0 / 128)) << label << " vs reference";
    }
  }
  // An f32 Linear does not take bf16 activations (the reference kernel runs it).
  bool handled = true;
  run_node(cpu_provider(), make_node("Linear", {}, "segmux"),
           {{random_tensor({4, 8}, 1).cast(DType::bf16)}, {random_tensor({8, 3}, 2), true}}, 2, &handled);
  EXPECT_FALSE(handled);
}

struct ConvCase {
  Shape x, w;
  ir::Attrs attrs;
  bool bias;
};

// `bf16_in_f32`: shapes where the kernel runs bf16 nodes in f32 (Winograd): the bf16 node must then give
// the f32 result, not the one on rounded operands.
void check_conv(const std::string& op, const std::vector<ConvCase>& cases, uint32_t seed, bool bf16_in_f32 = false) {
  for (auto& c : cases) {
    Tensor x = random_tensor(c.x, seed++), w = random_tensor(c.w, seed++);
    std::vector<Input> in = {{x}, {w, true}};
    const int64_t oc =
        op == "Conv" ? c.w[0] : c.w[1] * (c.attrs.count("group") ? std::get<int64_t>(c.attrs.at("group")) : 1);
    if (c.bias) in.push_back({random_tensor({oc}, seed++), true});
    int64_t k = shape_numel(c.w) / (op == "Conv" ? c.w[0] : c.w[0]);
    const std::string label = op + " x" + shape_str(c.x) + " w" + shape_str(c.w);
    expect_matches_reference(make_node(op, c.attrs), in, tol_k(k) * 2, 1e-5, label);
    // bf16 vs the reference on rounded operands (or on the operands themselves, bf16_in_f32).
    ir::Attrs battrs = c.attrs;
    battrs["segmux_precision"] = std::string("bf16");
    bool handled = false;
    auto got = run_node(cpu_provider(), make_node(op, battrs), in, 2, &handled);
    ASSERT_TRUE(handled) << label;
    std::vector<Input> rin = in;
    if (!bf16_in_f32) {
      rin[0].t = bf16_rounded(x);
      rin[1].t = bf16_rounded(w);
    }
    auto want = run_node(reference_provider(), make_node(op, c.attrs), rin);
    EXPECT_TRUE(close(got[0], want[0], tol_k(k) * 2, 1e-5)) << label << " bf16";
  }
}

TEST(CpuConv, StridedPaddedGroupedDilated) {
  using V = std::vector<int64_t>;
  check_conv(
      "Conv",
      {{{1, 3, 17, 17}, {8, 3, 3, 3}, {}, true},
       {{2, 4, 16, 15}, {6, 4, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true},
       {{1, 8, 13, 13}, {8, 2, 3, 3}, {{"group", int64_t(4)}, {"pads", V{1, 0, 2, 1}}}, false},
       {{1, 6, 19, 19}, {6, 1, 3, 3}, {{"group", int64_t(6)}, {"dilations", V{2, 2}}, {"pads", V{2, 2, 2, 2}}}, true},
       {{1, 16, 9, 9}, {32, 16, 1, 1}, {}, true},
       {{1, 3, 28, 28}, {16, 3, 14, 14}, {{"strides", V{14, 14}}}, false},
       {{1, 5, 23}, {7, 5, 4}, {{"strides", V{3}}, {"pads", V{2, 1}}}, true},
       {{1, 2, 5, 6, 7}, {4, 2, 3, 3, 3}, {{"pads", V{1, 1, 1, 1, 1, 1}}}, true},
       {{1, 4, 11, 11}, {4, 4, 3, 3}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2, 2}}}, true},
       {{1, 4, 10, 10}, {4, 4, 2, 2}, {{"auto_pad", std::string("SAME_LOWER")}}, true}},
      500);
}

// 3x3 stride-1 convolutions with >= 64 channels on >= 1024 output pixels run as Winograd (onednn_conv.cpp):
// the same tolerance as the direct kernel, also channels-last and without bias; bf16 nodes there too, in
// f32 (faster than direct bf16).
TEST(CpuConv, WinogradShapes) {
  using V = std::vector<int64_t>;
  const V p1 = {1, 1, 1, 1};
  check_conv("Conv",
             {{{1, 64, 40, 40}, {64, 64, 3, 3}, {{"pads", p1}}, true},
              {{1, 128, 33, 34}, {96, 128, 3, 3}, {{"pads", p1}}, false}},
             700, cpu::onednn_has_winograd());
  // 30 x 30 outputs: below the Winograd size, so bf16 runs in bf16
  check_conv("Conv", {{{2, 64, 32, 32}, {80, 64, 3, 3}, {{"pads", V{0, 0, 0, 0}}}, true}}, 705);
  const Tensor x = random_tensor({1, 64, 36, 36}, 710), w = random_tensor({64, 64, 3, 3}, 711);
  const Tensor b = random_tensor({64}, 712);
  ir::Attrs a = {{"pads", p1}, {"channels_last_in", int64_t(0)}, {"channels_last_out", int64_t(1)}};
  expect_matches_reference(make_node("Conv", a, "segmux"), {{x}, {w, true}, {b, true}}, tol_k(576) * 2, 1e-5,
                           "winograd channels-last out");
}

// segmux Conv (channels-last input and/or output) against the reference, which transposes around the
// ONNX Conv reference; and the reference itself against ONNX Conv on transposed tensors, so a layout
// mix-up in both cannot cancel out.
Tensor nhwc_of(const Tensor& nchw) {
  const int64_t N = nchw.dim(0), C = nchw.dim(1), H = nchw.dim(2), W = nchw.dim(3);
  Tensor y(DType::f32, {N, H, W, C});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          y.data<float>()[((n * H + h) * W + w) * C + c] = nchw.data<float>()[((n * C + c) * H + h) * W + w];
  return y;
}

TEST(CpuConv, ChannelsLastSegmuxConv) {
  using V = std::vector<int64_t>;
  const std::vector<ConvCase> cases = {
      {{1, 16, 12, 11}, {24, 16, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{2, 8, 9, 9}, {8, 1, 7, 7}, {{"group", int64_t(8)}, {"pads", V{3, 3, 3, 3}}}, true},
      {{1, 32, 6, 5}, {16, 32, 1, 1}, {}, false}};
  uint32_t seed = 900;
  for (auto& c : cases) {
    const Tensor x = random_tensor(c.x, seed++), w = random_tensor(c.w, seed++), b = random_tensor({c.w[0]}, seed++);
    const int64_t k = shape_numel(c.w) / c.w[0];
    const auto want =
        run_node(reference_provider(), make_node("Conv", c.attrs),
                 c.bias ? std::vector<Input>{{x}, {w, true}, {b, true}} : std::vector<Input>{{x}, {w, true}});
    for (int last_in = 0; last_in < 2; ++last_in)
      for (int last_out = 0; last_out < 2; ++last_out) {
        ir::Attrs a = c.attrs;
        a["channels_last_in"] = int64_t(last_in);
        a["channels_last_out"] = int64_t(last_out);
        std::vector<Input> in = {{last_in ? nhwc_of(x) : x}, {w, true}};
        if (c.bias) in.push_back({b, true});
        const std::string label =
            "segmux Conv x" + shape_str(c.x) + " in " + std::to_string(last_in) + " out " + std::to_string(last_out);
        expect_matches_reference(make_node("Conv", a, "segmux"), in, tol_k(k) * 2, 1e-5, label);
        auto ref = run_node(reference_provider(), make_node("Conv", a, "segmux"), in);
        ASSERT_EQ(ref.size(), 1u) << label;
        EXPECT_TRUE(close(ref[0], last_out ? nhwc_of(want[0]) : want[0], 0, 0)) << label << " reference layout";
      }
  }
}

TEST(CpuConvTranspose, StridesGroupsOutputPadding) {
  using V = std::vector<int64_t>;
  check_conv(
      "ConvTranspose",
      {{{1, 8, 9, 9}, {8, 4, 2, 2}, {{"strides", V{2, 2}}}, true},
       {{2, 4, 7, 5}, {4, 3, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}, {"output_padding", V{1, 1}}}, true},
       {{1, 6, 5, 5}, {6, 2, 3, 3}, {{"group", int64_t(3)}, {"strides", V{2, 1}}}, false},
       {{1, 3, 6, 6}, {3, 5, 3, 3}, {{"dilations", V{2, 2}}, {"pads", V{1, 2, 1, 0}}}, true},
       {{1, 4, 17}, {4, 2, 4}, {{"strides", V{4}}}, true}},
      600);
}

}  // namespace
}  // namespace segmux::testing_cpu
