// Every CUDA kernel against the reference kernel on fresh random inputs (tests/kernels_cuda/harness.h).
// Needs a GPU: without one (or in a build without the CUDA backend) main() prints one line and exits 77,
// which ctest reports as skipped (SKIP_RETURN_CODE), never as passed.
#include <cstdio>
#include <random>

#include "ir/pointwise.h"
#include "ir/precision.h"
#include "kernels_cuda/harness.h"

namespace segmux::testing_cuda {
namespace {

uint32_t fresh_seed() { return std::random_device{}(); }  // fresh inputs every run; printed on failure

Tensor positive(const Shape& s, uint32_t seed) { return random_tensor(s, seed, 0.1f, 4.f); }

Tensor ints(const Shape& s, const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>(s, v); }

Tensor random_bool(const Shape& s, uint32_t seed, double p_true = 0.5) {
  Tensor t(DType::boolean, s);
  std::mt19937 rng(seed);
  std::bernoulli_distribution d(p_true);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = d(rng);
  return t;
}

TEST(CudaElementwise, BinaryBroadcast) {
  const uint32_t seed = fresh_seed();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    expect_matches_reference(make_node(op), {{random_tensor({2, 3, 4}, seed)}, {positive({4}, seed + 1)}}, kFp32Limit,
                             std::string(op) + " seed " + std::to_string(seed));
    expect_matches_reference(make_node(op), {{random_tensor({2, 1, 4}, seed)}, {positive({3, 1}, seed + 2)}},
                             kFp32Limit, std::string(op) + " both broadcast, seed " + std::to_string(seed));
  }
  expect_matches_reference(make_node("Pow"), {{positive({5, 7}, seed)}, {random_tensor({7}, seed + 3)}}, kFp32Limit,
                           "Pow");
}

TEST(CudaElementwise, IntegerBinary) {
  for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"}) {
    expect_matches_reference(make_node(op), {{ints({2, 3}, {1, -2, 3, 40, 5, -6})}, {ints({3}, {7, 0, -9})}}, 0,
                             std::string(op) + " i64");
    expect_matches_reference(
        make_node(op),
        {{Tensor::from_vector<int32_t>({3, 1}, {1, -2, 3})}, {Tensor::from_vector<int32_t>({2}, {5, -7})}}, 0,
        std::string(op) + " i32");
  }
}

TEST(CudaElementwise, Unary) {
  const uint32_t seed = fresh_seed();
  for (const char* op : {"Relu", "Sigmoid", "Abs", "Neg", "Sin", "Cos", "Exp", "Erf", "Sign", "Floor", "Ceil", "Tanh"})
    expect_matches_reference(make_node(op), {{random_tensor({3, 50}, seed, -4.f, 4.f)}}, kFp32Limit,
                             std::string(op) + " seed " + std::to_string(seed));
  for (const char* op : {"Sqrt", "Log", "Reciprocal"})
    expect_matches_reference(make_node(op), {{positive({3, 50}, seed)}}, kFp32Limit, op);
}

TEST(CudaElementwise, GeluRoundingVariants) {
  const uint32_t seed = fresh_seed();
  for (int in : {0, 1})
    for (int out : {0, 1}) {
      ir::Attrs a = {{ir::kGeluRoundInput, int64_t(in)}, {ir::kGeluRoundOutput, int64_t(out)}};
      expect_matches_reference(make_node("Gelu", a, "segmux"), {{random_tensor({4, 333}, seed, -5.f, 5.f)}}, kFp32Limit,
                               "Gelu in " + std::to_string(in) + " out " + std::to_string(out));
    }
}

TEST(CudaElementwise, PointwiseChainAndClip) {
  const uint32_t seed = fresh_seed();
  ir::Attrs a = {{ir::kPointwiseSteps, std::string("Sigmoid,Mul,Add.r,Relu,Div")}};
  expect_matches_reference(make_node("Pointwise", a, "segmux"),
                           {{random_tensor({2, 3, 40}, seed)},
                            {random_tensor({3, 1}, seed + 1)},
                            {random_tensor({40}, seed + 2)},
                            {positive({2, 1, 1}, seed + 3)}},
                           kFp32Limit, "Pointwise seed " + std::to_string(seed));
  expect_matches_reference(
      make_node("Clip"),
      {{random_tensor({100}, seed)}, {Tensor::scalar<float>(-0.25f), true}, {Tensor::scalar<float>(0.5f), true}},
      kFp32Limit, "Clip");
}

TEST(CudaElementwise, CompareWhereNotCast) {
  const uint32_t seed = fresh_seed();
  for (const char* op : {"Equal", "Greater", "Less"}) {
    Tensor a = random_tensor({4, 8}, seed);
    Tensor b = a.clone();
    b.data<float>()[3] += 1.f;  // some equal, some not
    expect_matches_reference(make_node(op), {{a}, {b}}, 0, std::string(op) + " f32");
    expect_matches_reference(make_node(op), {{ints({3}, {1, -2, 7})}, {ints({1}, {1})}}, 0, std::string(op) + " i64");
  }
  expect_matches_reference(
      make_node("Where"),
      {{random_bool({3, 1, 5}, seed)}, {random_tensor({4, 5}, seed + 1)}, {random_tensor({5}, seed + 2)}}, 0, "Where");
  expect_matches_reference(make_node("Not"), {{random_bool({17}, seed)}}, 0, "Not");
  expect_matches_reference(make_node("Cast", {{"to", int64_t(16)}}), {{random_tensor({64}, seed, -300.f, 300.f)}}, 0,
                           "Cast f32 -> bf16");
  expect_matches_reference(make_node("Cast", {{"to", int64_t(7)}}), {{random_tensor({64}, seed, -300.f, 300.f)}}, 0,
                           "Cast f32 -> i64");
  expect_matches_reference(make_node("Cast", {{"to", int64_t(1)}}), {{random_bool({9}, seed)}}, 0, "Cast bool -> f32");
}

TEST(CudaMovement, TransposeSliceExpand) {
  const uint32_t seed = fresh_seed();
  expect_matches_reference(make_node("Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}),
                           {{random_tensor({2, 3, 5, 7}, seed)}}, 0, "Transpose");
  expect_matches_reference(make_node("Slice"),
                           {{random_tensor({6, 9}, seed)},
                            {ints({2}, {1, -1}), true},
                            {ints({2}, {5, 0}), true},
                            {ints({2}, {0, 1}), true},
                            {ints({2}, {2, -2}), true}},
                           0, "Slice with steps");
  expect_matches_reference(make_node("Expand"), {{random_tensor({3, 1}, seed)}, {ints({3}, {2, 3, 4}), true}}, 0,
                           "Expand");
}

TEST(CudaMovement, ConcatSplitGather) {
  const uint32_t seed = fresh_seed();
  expect_matches_reference(make_node("Concat", {{"axis", int64_t(1)}}),
                           {{random_tensor({2, 3, 4}, seed)}, {random_tensor({2, 5, 4}, seed + 1)}}, 0, "Concat");
  expect_matches_reference(make_node("Split", {{"axis", int64_t(2)}}, "", 2),
                           {{random_tensor({2, 3, 10}, seed)}, {ints({2}, {4, 6}), true}}, 0, "Split");
  expect_matches_reference(make_node("Gather", {{"axis", int64_t(1)}}),
                           {{random_tensor({3, 7, 2}, seed)}, {ints({4}, {0, -1, 3, 3}), true}}, 0, "Gather");
}

TEST(CudaNorms, LayerGroupInstanceNormSoftmax) {
  const uint32_t seed = fresh_seed();
  expect_matches_reference(make_node("LayerNormalization", {{"axis", int64_t(-1)}, {"epsilon", 1e-6f}}),
                           {{random_tensor({7, 1024}, seed, -3.f, 5.f)},
                            {random_tensor({1024}, seed + 1)},
                            {random_tensor({1024}, seed + 2)}},
                           kFp32Limit, "LayerNorm seed " + std::to_string(seed));
  expect_matches_reference(
      make_node("GroupNorm", {{"num_groups", int64_t(4)}}, "segmux"),
      {{random_tensor({2, 8, 6, 6}, seed)}, {random_tensor({8}, seed + 1)}, {random_tensor({8}, seed + 2)}}, kFp32Limit,
      "GroupNorm");
  expect_matches_reference(
      make_node("InstanceNormalization"),
      {{random_tensor({2, 3, 17}, seed)}, {random_tensor({3}, seed + 1)}, {random_tensor({3}, seed + 2)}}, kFp32Limit,
      "InstanceNorm");
  expect_matches_reference(make_node("Softmax", {{"axis", int64_t(-1)}}), {{random_tensor({5, 2000}, seed, -9.f, 9.f)}},
                           kFp32Limit, "Softmax");
}

TEST(CudaNorms, Reductions) {
  const uint32_t seed = fresh_seed();
  for (const char* op : {"ReduceMean", "ReduceMax"})
    expect_matches_reference(make_node(op, {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t(1)}}),
                             {{random_tensor({3, 4, 5, 6}, seed)}}, kFp32Limit, op);
  expect_matches_reference(make_node("ReduceSum", {{"keepdims", int64_t(0)}}),
                           {{random_tensor({3, 4, 5}, seed)}, {ints({1}, {-1}), true}}, kFp32Limit, "ReduceSum");
}

TEST(CudaIndex, RopeArgMaxGatherElements) {
  const uint32_t seed = fresh_seed();
  expect_matches_reference(make_node("Rope", {}, "segmux"),
                           {{random_tensor({2, 4, 9, 16}, seed, -3.f, 3.f)},
                            {random_tensor({9, 8, 1}, seed + 1)},
                            {random_tensor({9, 8, 1}, seed + 2)}},
                           0, "Rope (bit for bit: no FMA) seed " + std::to_string(seed));
  Tensor x = random_tensor({3, 6, 5}, seed);
  x.data<float>()[7] = x.data<float>()[2];  // a tie: the first index wins
  expect_matches_reference(make_node("ArgMax", {{"axis", int64_t(1)}, {"keepdims", int64_t(1)}}), {{x}}, 0, "ArgMax");
  expect_matches_reference(make_node("ArgMax", {{"axis", int64_t(-1)}, {"select_last_index", int64_t(1)}}), {{x}}, 0,
                           "ArgMax last");
  expect_matches_reference(make_node("GatherElements", {{"axis", int64_t(1)}}),
                           {{random_tensor({3, 6, 5}, seed)}, {ints({3, 2, 5}, std::vector<int64_t>(30, 0))}}, 0,
                           "GatherElements zeros");
  std::vector<int64_t> idx(30);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t((i * 7 + seed) % 12) - 6;  // -6 .. 5
  expect_matches_reference(make_node("GatherElements", {{"axis", int64_t(1)}}),
                           {{random_tensor({3, 6, 5}, seed)}, {ints({3, 2, 5}, idx)}}, 0, "GatherElements");
}

TEST(CudaConv, ConvLayoutsGroupsAndTranspose) {
  const uint32_t seed = fresh_seed();
  const std::string s = " seed " + std::to_string(seed);
  ir::Attrs geom = {{"pads", std::vector<int64_t>{1, 2, 1, 0}},
                    {"strides", std::vector<int64_t>{2, 1}},
                    {"dilations", std::vector<int64_t>{1, 2}}};
  expect_matches_reference(make_node("Conv", geom),
                           {{random_tensor({2, 6, 11, 9}, seed)},
                            {random_tensor({8, 6, 3, 3}, seed + 1), true},
                            {random_tensor({8}, seed + 2), true}},
                           kFp32Limit, "Conv NCHW" + s);
  ir::Attrs grouped = geom;
  grouped["group"] = int64_t(2);
  expect_matches_reference(make_node("Conv", grouped),
                           {{random_tensor({1, 6, 11, 9}, seed)}, {random_tensor({4, 3, 3, 3}, seed + 1), true}},
                           kFp32Limit, "Conv 2 groups, no bias" + s);
  ir::Attrs depthwise = {{"pads", std::vector<int64_t>{3, 3, 3, 3}},
                         {"group", int64_t(8)},
                         {"channels_last_in", int64_t(1)},
                         {"channels_last_out", int64_t(1)}};
  expect_matches_reference(make_node("Conv", depthwise, "segmux"),
                           {{random_tensor({1, 10, 12, 8}, seed)},
                            {random_tensor({8, 1, 7, 7}, seed + 1), true},
                            {random_tensor({8}, seed + 2), true}},
                           kFp32Limit, "segmux Conv NHWC depthwise 7x7" + s);
  for (int64_t in : {0, 1})
    for (int64_t out : {0, 1}) {
      ir::Attrs a = {{"channels_last_in", in}, {"channels_last_out", out}};
      const Shape x = in ? Shape{2, 7, 5, 16} : Shape{2, 16, 7, 5};
      expect_matches_reference(make_node("Conv", a, "segmux"),
                               {{random_tensor(x, seed)},
                                {random_tensor({12, 16, 1, 1}, seed + 1), true},
                                {random_tensor({12}, seed + 2), true}},
                               kFp32Limit, "segmux Conv 1x1 in " + std::to_string(in) + " out " + std::to_string(out));
    }
  ir::Attrs bf16 = {{ir::kPrecisionAttr, std::string(ir::kPrecisionBf16)}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  expect_matches_reference(make_node("Conv", bf16),
                           {{random_tensor({1, 32, 9, 9}, seed)},
                            {random_tensor({16, 32, 3, 3}, seed + 1, -0.2f, 0.2f), true},
                            {random_tensor({16}, seed + 2), true}},
                           kBf16Limit, "Conv bf16" + s);
  expect_matches_reference(make_node("ConvTranspose", {{"strides", std::vector<int64_t>{2, 2}}}),
                           {{random_tensor({2, 8, 5, 6}, seed)},
                            {random_tensor({8, 4, 2, 2}, seed + 1), true},
                            {random_tensor({4}, seed + 2), true}},
                           kFp32Limit, "ConvTranspose k = s = 2" + s);
}

TEST(CudaIndex, ResizeNearest) {
  const uint32_t seed = fresh_seed();
  ir::Attrs model = {{"mode", std::string("nearest")},
                     {"coordinate_transformation_mode", std::string("asymmetric")},
                     {"nearest_mode", std::string("floor")}};
  expect_matches_reference(make_node("Resize", model),
                           {{random_tensor({2, 3, 5, 7}, seed)},
                            {Tensor(), false, true},
                            {Tensor(), false, true},
                            {ints({4}, {2, 3, 13, 9}), true}},
                           0, "Resize nearest asymmetric floor (sizes)");
  expect_matches_reference(make_node("Resize", {{"mode", std::string("nearest")}}),
                           {{random_tensor({1, 2, 6, 4}, seed)},
                            {Tensor(), false, true},
                            {Tensor::from_vector<float>({4}, {1.f, 1.f, 0.5f, 2.5f}), true}},
                           0, "Resize nearest half_pixel (scales)");
}

TEST(CudaIndex, RoiAlign) {
  const uint32_t seed = fresh_seed();
  const Tensor rois = Tensor::from_vector<float>({4, 4}, {0.f, 0.f, 20.f, 16.f, 3.5f, 2.f, 9.f, 30.f,  //
                                                          -4.f, -2.f, 6.f, 5.f, 10.f, 10.f, 10.5f, 10.2f});
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"}) {
      ir::Attrs a = {
          {"mode", std::string(mode)},   {"coordinate_transformation_mode", std::string(ctm)},
          {"output_height", int64_t(5)}, {"output_width", int64_t(4)},
          {"spatial_scale", 0.5f},       {"sampling_ratio", int64_t(std::string(ctm) == "half_pixel" ? 0 : 2)}};
      expect_matches_reference(make_node("RoiAlign", a),
                               {{random_tensor({2, 3, 10, 12}, seed)}, {rois}, {ints({4}, {0, 1, 1, 0}), true}},
                               kFp32Limit, std::string("RoiAlign ") + mode + " " + ctm);
    }
}

std::vector<Input> linear_inputs(uint32_t seed, bool residual_full) {
  return {{random_tensor({2, 37, 96}, seed)},
          {random_tensor({96, 80}, seed + 1, -0.2f, 0.2f), true},
          {random_tensor({80}, seed + 2), true},
          {residual_full ? random_tensor({2, 37, 80}, seed + 3) : random_tensor({80}, seed + 3)}};
}

TEST(CudaLinalg, LinearFp32Tf32Bf16) {
  const uint32_t seed = fresh_seed();
  const std::string s = " seed " + std::to_string(seed);
  expect_matches_reference(make_node("Linear", {}, "segmux"), linear_inputs(seed, true), kFp32Limit,
                           "Linear fp32, residual as C" + s);
  expect_matches_reference(make_node("Linear", {{"activation", std::string("gelu")}}, "segmux"),
                           linear_inputs(seed, false), kFp32Limit, "Linear fp32 gelu, broadcast residual" + s);
  // ReLU with a full residual: the residual is added after the activation, not as the GEMM's C.
  expect_matches_reference(make_node("Linear", {{"activation", std::string("relu")}}, "segmux"),
                           linear_inputs(seed, true), kFp32Limit, "Linear fp32 relu, full residual" + s);
  expect_matches_reference(make_node("Linear", {}, "segmux"), linear_inputs(seed, true), kTf32Limit, "Linear tf32" + s,
                           cuda::Fp32Gemm::tf32);
  expect_matches_reference(make_node("Linear", {{ir::kPrecisionAttr, std::string(ir::kPrecisionBf16)}}, "segmux"),
                           linear_inputs(seed, true), kBf16Limit, "Linear bf16" + s);
  // bf16 activations (compiler pass bf16-between-linears): a bf16 input taken as it is, a bf16 output.
  std::vector<Input> in16 = linear_inputs(seed, false);
  in16[0].t = in16[0].t.cast(DType::bf16);
  const ir::Attrs bf16_io = {{ir::kPrecisionAttr, std::string(ir::kPrecisionBf16)},
                             {ir::kLinearBf16Output, int64_t(1)},
                             {"activation", std::string("gelu")}};
  expect_matches_reference(make_node("Linear", bf16_io, "segmux"), in16, kBf16Limit,
                           "Linear bf16 input and output, gelu" + s);
}

TEST(CudaLinalg, MatMulShapes) {
  const uint32_t seed = fresh_seed();
  expect_matches_reference(make_node("MatMul"),
                           {{random_tensor({3, 4, 33}, seed)}, {random_tensor({3, 33, 20}, seed + 1)}}, kFp32Limit,
                           "MatMul batched");
  expect_matches_reference(make_node("MatMul"), {{random_tensor({2, 5, 16}, seed)}, {random_tensor({16, 8}, seed + 1)}},
                           kFp32Limit, "MatMul 2-D B");
  expect_matches_reference(make_node("MatMul"), {{random_tensor({5, 16}, seed)}, {random_tensor({4, 16, 8}, seed + 1)}},
                           kFp32Limit, "MatMul 2-D A");
}

TEST(CudaAttention, MasksAndHeadSizes) {
  const uint32_t seed = fresh_seed();
  for (int64_t d : {16, 32, 64}) {
    const std::string s = "D " + std::to_string(d) + " seed " + std::to_string(seed);
    auto q = random_tensor({2, 3, 40, d}, seed), k = random_tensor({2, 3, 300, d}, seed + 1),
         v = random_tensor({2, 3, 300, d}, seed + 2);
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}}, kFp32Limit, "no mask " + s);
    expect_matches_reference(make_node("Attention", {{"scale", 0.3f}}, "segmux"),
                             {{q}, {k}, {v}, {random_tensor({1, 3, 1, 300}, seed + 3, -2.f, 2.f)}}, kFp32Limit,
                             "additive mask " + s);
    Tensor mask = random_bool({2, 1, 40, 300}, seed + 4, 0.3);
    for (int64_t j = 0; j < 300; ++j) mask.data<bool>()[5 * 300 + j] = false;  // a fully masked row: zeros
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {mask}}, kFp32Limit,
                             "bool mask " + s);
  }
}

}  // namespace
}  // namespace segmux::testing_cuda

int main(int argc, char** argv) {
  std::string why;
  if (segmux::cuda::usable_devices(&why) == 0) {
    std::printf("kernels_cuda: SKIPPED, no test ran: %s\n", why.c_str());
    return 77;  // ctest SKIP_RETURN_CODE: skipped, not passed
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
