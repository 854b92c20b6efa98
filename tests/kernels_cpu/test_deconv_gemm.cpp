// ConvTranspose with kernel == stride as one GEMM plus a scatter (kernels/cpu/onednn_deconv_gemm.cpp),
// f32 and bf16: which nodes take it, and that it computes the reference (in bf16 on bf16-rounded
// operands; the only difference is then the f32 accumulation order), with constant, runtime or no
// bias, batches, 1-D and non-square kernels.
#include "harness.h"

namespace segmux::cpu {
// Declared in kernels/cpu/onednn_common.h, which needs OpenMP flags the tests do not build with.
std::unique_ptr<Kernel> make_deconv_gemm(const KernelInit& init);
}  // namespace segmux::cpu

namespace segmux::testing_cpu {
namespace {

using V = std::vector<int64_t>;

bool has_native_bf16() { return __builtin_cpu_supports("avx512bf16"); }

// Whether the GEMM kernel takes this node (constant weight and bias, shapes known).
bool gemm_takes(const ir::Attrs& attrs, const Shape& x, const Shape& w) {
  ir::Node node = make_node("ConvTranspose", attrs);
  node.inputs = {0, 1};
  Tensor wt = random_tensor(w, 1);
  ir::TensorType tx{DType::f32, x, true}, tw{DType::f32, w, true};
  std::vector<const ir::TensorType*> tin = {&tx, &tw};
  std::vector<const Tensor*> consts = {nullptr, &wt};
  auto outs = ir::infer_node(node, tin, consts);
  KernelInit init{node, tin, consts, outs, 2};
  return cpu::make_deconv_gemm(init) != nullptr;
}

ir::Attrs bf16(ir::Attrs a) {
  a["segmux_precision"] = std::string("bf16");
  return a;
}

TEST(DeconvGemmBf16, TakesOnlyKernelEqualsStride) {
  if (!has_native_bf16()) GTEST_SKIP() << "no AVX512_BF16: the deconvolution path emulates bf16";
  EXPECT_TRUE(gemm_takes(bf16({{"strides", V{2, 2}}}), {1, 8, 5, 5}, {8, 4, 2, 2}));
  EXPECT_TRUE(gemm_takes(bf16({{"strides", V{4}}}), {2, 3, 7}, {3, 5, 4}));
  EXPECT_FALSE(gemm_takes({{"strides", V{2, 2}}, {"pads", V{1, 1, 0, 0}}}, {1, 8, 5, 5}, {8, 4, 2, 2}));  // fp32 too
  EXPECT_FALSE(gemm_takes(bf16({{"strides", V{1, 1}}}), {1, 8, 5, 5}, {8, 4, 2, 2}));
  EXPECT_FALSE(gemm_takes(bf16({{"strides", V{2, 2}}, {"pads", V{1, 1, 0, 0}}}), {1, 8, 5, 5}, {8, 4, 2, 2}));
  EXPECT_FALSE(gemm_takes(bf16({{"strides", V{2, 2}}, {"output_padding", V{1, 1}}}), {1, 8, 5, 5}, {8, 4, 2, 2}));
  EXPECT_FALSE(gemm_takes(bf16({{"strides", V{2, 2}}, {"group", int64_t(2)}}), {1, 8, 5, 5}, {8, 2, 2, 2}));
  EXPECT_FALSE(gemm_takes(bf16({{"strides", V{2, 2}}, {"dilations", V{2, 2}}}), {1, 8, 5, 5}, {8, 4, 2, 2}));
}

// Every node of the cases takes the GEMM (where oneDNN has one of that precision) and computes the
// reference: in bf16 on bf16-rounded operands, in fp32 on the operands as they are.
void expect_matches_reference(bool bf16_build, uint32_t seed) {
  struct Case {
    Shape x, w;
    V strides;
    int bias;  // 0 none, 1 constant, 2 runtime input
  };
  const std::vector<Case> cases = {{{1, 64, 12, 12}, {64, 32, 2, 2}, {2, 2}, 1},
                                   {{2, 24, 7, 9}, {24, 16, 2, 2}, {2, 2}, 2},
                                   {{1, 16, 5, 6}, {16, 8, 2, 3}, {2, 3}, 1},
                                   {{1, 32, 9, 9}, {32, 24, 3, 3}, {3, 3}, 0},
                                   {{2, 12, 11}, {12, 6, 4}, {4}, 1}};
  for (auto& c : cases) {
    const ir::Attrs attrs = {{"strides", c.strides}};
    if (!bf16_build || has_native_bf16()) {
      EXPECT_TRUE(gemm_takes(bf16_build ? bf16(attrs) : attrs, c.x, c.w)) << shape_str(c.x);
    }
    Tensor x = random_tensor(c.x, seed++), w = random_tensor(c.w, seed++);
    std::vector<Input> in = {{x}, {w, true}};
    if (c.bias) in.push_back({random_tensor({c.w[1]}, seed++), c.bias == 1});
    bool handled = false;
    auto got = run_node(cpu_provider(), make_node("ConvTranspose", bf16_build ? bf16(attrs) : attrs), in, 2, &handled);
    ASSERT_TRUE(handled);
    std::vector<Input> rin = in;
    if (bf16_build) {
      rin[0].t = bf16_rounded(x);
      rin[1].t = bf16_rounded(w);
    }
    auto want = run_node(reference_provider(), make_node("ConvTranspose", attrs), rin);
    const double tol = 4e-6 * std::sqrt(double(c.w[0]));
    EXPECT_TRUE(close(got[0], want[0], tol, 1e-5)) << "x" << shape_str(c.x) << " w" << shape_str(c.w);
  }
}

TEST(DeconvGemmBf16, MatchesReferenceOnRoundedOperands) { expect_matches_reference(true, 40); }

// Whether oneDNN has a non-reference f32 matmul here (AVX2 and up): then fp32 nodes take the GEMM.
bool has_fast_f32_matmul() { return __builtin_cpu_supports("avx2"); }

TEST(DeconvGemmFp32, TakesKernelEqualsStrideAndMatchesReference) {
  if (!has_fast_f32_matmul()) GTEST_SKIP() << "no AVX2: the deconvolution runs";
  EXPECT_TRUE(gemm_takes({{"strides", V{2, 2}}}, {1, 8, 5, 5}, {8, 4, 2, 2}));
  EXPECT_FALSE(gemm_takes({{"strides", V{1, 1}}}, {1, 8, 5, 5}, {8, 4, 2, 2}));
  EXPECT_FALSE(gemm_takes({{"strides", V{2, 2}}, {"group", int64_t(2)}}, {1, 8, 5, 5}, {8, 2, 2, 2}));
  expect_matches_reference(false, 70);
}

}  // namespace
}  // namespace segmux::testing_cpu
