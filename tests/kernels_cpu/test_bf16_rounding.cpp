// The rounding passes (compiler/passes/bf16_rounding.cpp) on the official bf16 MLP pattern of the ViT
// (x, fc1 output and GELU output rounded to bf16 by Cast pairs): which Casts go, that fc1 and GELU fuse
// in bf16 builds, that every build folds the Casts around GELU into it, and what the optimized kernels
// compute before and after.
#include <cstring>

#include "compiler/pass_manager.h"
#include "compiler/passes.h"
#include "harness.h"
#include "ir/precision.h"
#include "models/sam31/layers.h"
#include "runtime/interpreter.h"

namespace segmux::testing_cpu {
namespace {

namespace L = sam31::layers;
using ir::GraphBuilder;

int count_ops(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.op_type == op;
  return n;
}

Tensor run_optimized(const ir::Graph& g, const Tensor& x) {
  InterpreterOptions o;
  o.num_threads = 2;
  o.use_optimized_kernels = true;
  Interpreter s(g, o);
  return s.run({{"x", x}}).at("y");
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::fabs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return m;
}

// The passes of a build, with or without the rounding passes.
ir::Graph compiled(const ir::Graph& g, bool drop_roundings, const std::string& precision = "bf16") {
  ir::Graph c = g;
  compiler::PassManagerOptions opt;
  if (!drop_roundings) {
    if (precision == "bf16") opt.skip.insert("bf16-roundings");
    opt.skip.insert("gelu-bf16-roundings");
  }
  compiler::run_passes(c, compiler::default_passes(precision), opt);
  return c;
}

// The official bf16 MLP: y = x + fc2(round(GELU(round(fc1(round(x)))))).
ir::Graph official_mlp(const Shape& x_shape, int64_t H) {
  const int64_t D = x_shape.back();
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, x_shape);
  int h = L::linear_t(b, L::round_to_bf16(b, x), random_tensor({H, D}, 5), random_tensor({H}, 6), "fc1");
  h = L::round_to_bf16(b, L::gelu_erf(b, L::round_to_bf16(b, h)));
  int y = L::add(b, x, L::linear_t(b, h, random_tensor({D, H}, 7), random_tensor({D}, 8), "fc2"));
  b.output(y, "y");
  return g;
}

const ir::Node* find_op(const ir::Graph& g, const std::string& op) {
  for (auto& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

TEST(Bf16Roundings, RoundedInputOfABf16LinearIsTheSameNumbers) {
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t D = 40, H = 56;
  int x = b.input("x", DType::f32, {3, 7, D});
  int h = L::linear_t(b, L::round_to_bf16(b, x), random_tensor({H, D}, 2), random_tensor({H}, 3), "fc");
  b.output(h, "y");
  ir::Graph kept = compiled(g, false), dropped = compiled(g, true);
  EXPECT_EQ(count_ops(kept, "Cast"), 2);
  EXPECT_EQ(count_ops(dropped, "Cast"), 0);
  // The bf16 Linear rounds its input to bf16 itself, as Cast does: bit-identical results.
  Tensor in = random_tensor({3, 7, D}, 4);
  EXPECT_TRUE(run_optimized(kept, in).identical(run_optimized(dropped, in)));
}

TEST(Bf16Roundings, OfficialBf16MlpFusesAndStaysClose) {
  const ir::Graph g = official_mlp({2, 9, 48}, 96);
  ir::Graph kept = compiled(g, false), dropped = compiled(g, true);
  EXPECT_EQ(count_ops(kept, "Cast"), 6);
  EXPECT_EQ(count_ops(dropped, "Cast"), 0);
  EXPECT_EQ(count_ops(dropped, "Gelu"), 0);
  int gelu = 0;
  for (auto& n : dropped.nodes) gelu += n.op_type == "Linear" && n.attr_string("activation", "") == "gelu";
  EXPECT_EQ(gelu, 1);
  // Only GELU's input is no longer rounded (one bf16 rounding, relative 2^-9): the change is smaller
  // than the bf16 build's own distance from the fp32 graph (reference kernels, which ignore bf16).
  Tensor in = random_tensor({2, 9, 48}, 9);
  InterpreterOptions ref_opt;
  ref_opt.use_optimized_kernels = false;
  const Tensor want = Interpreter(g, ref_opt).run({{"x", in}}).at("y");
  const Tensor a = run_optimized(kept, in), c = run_optimized(dropped, in);
  const double change = max_abs_diff(a, c), bf16_error = max_abs_diff(a, want);
  EXPECT_GT(change, 0.0);
  EXPECT_LT(change, bf16_error) << "bf16 build vs fp32 graph: " << bf16_error;
}

TEST(Bf16Roundings, LeavesFp32BuildsAndOtherConsumersAlone) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 16});
  int r = L::round_to_bf16(b, x);
  int h = L::linear_t(b, r, random_tensor({8, 16}, 10), random_tensor({8}, 11), "fc");
  b.output(h, "y");
  b.output(L::relu(b, r), "z");  // r is also read by a Relu
  ir::Graph c = g;
  compiler::run_passes(c, compiler::default_passes("fp32"), {});
  EXPECT_EQ(count_ops(c, "Cast"), 2);
  ir::Graph c16 = compiled(g, true);
  EXPECT_EQ(count_ops(c16, "Cast"), 2);  // still needed by the Relu
  int linear = 0;
  for (auto& n : c16.nodes) {
    if (n.op_type != "Linear") continue;
    ++linear;
    EXPECT_EQ(c16.value(n.inputs[0]).name, "x");
  }
  EXPECT_EQ(linear, 1);
}

TEST(Bf16Roundings, Fp32BuildFoldsTheCastsAroundGeluExactly) {
  const ir::Graph g = official_mlp({2, 9, 48}, 96);
  ir::Graph kept = compiled(g, false, "fp32"), folded = compiled(g, true, "fp32");
  EXPECT_EQ(count_ops(kept, "Cast"), 6);
  EXPECT_EQ(count_ops(folded, "Cast"), 2);  // fc1's input: an f32 Linear does not round it
  const ir::Node* gelu = find_op(folded, "Gelu");
  ASSERT_NE(gelu, nullptr);  // not fused into fc1: oneDNN's post-op would not round
  EXPECT_EQ(gelu->attr_int(ir::kGeluRoundInput, 0), 1);
  EXPECT_EQ(gelu->attr_int(ir::kGeluRoundOutput, 0), 1);
  Tensor in = random_tensor({2, 9, 48}, 9);
  EXPECT_TRUE(run_optimized(kept, in).identical(run_optimized(folded, in)));
  InterpreterOptions ref_opt;
  ref_opt.use_optimized_kernels = false;
  EXPECT_TRUE(Interpreter(kept, ref_opt)
                  .run({{"x", in}})
                  .at("y")
                  .identical(Interpreter(folded, ref_opt).run({{"x", in}}).at("y")));
}

// bf16-between-linears: in a bf16 build the official MLP's fc1 (+ GELU) stores its output as bf16 for
// fc2, which rounds it to bf16 anyway: the same numbers, bit for bit, with half the bytes.
TEST(Bf16BetweenLinears, Fc1StoresBf16ForFc2WithTheSameResult) {
  const ir::Graph g = official_mlp({2, 9, 48}, 96);
  ir::Graph f32_between = g, bf16_between = g;
  compiler::PassManagerOptions skip;
  skip.skip.insert("bf16-between-linears");
  compiler::run_passes(f32_between, compiler::default_passes("bf16"), skip);
  compiler::run_passes(bf16_between, compiler::default_passes("bf16"), {});
  int marked = 0;
  for (auto& n : bf16_between.nodes) {
    if (n.op_type != "Linear") continue;
    const bool fc1 = n.attr_string("activation", "") == "gelu";
    EXPECT_EQ(n.attr_int(ir::kLinearBf16Output, 0), fc1 ? 1 : 0) << n.name;
    EXPECT_EQ(bf16_between.value(n.outputs[0]).dtype, fc1 ? DType::bf16 : DType::f32) << n.name;
    marked += fc1;
  }
  EXPECT_EQ(marked, 1);
  for (auto& n : f32_between.nodes) EXPECT_EQ(n.attr_int(ir::kLinearBf16Output, 0), 0) << n.name;
  Tensor in = random_tensor({2, 9, 48}, 9);
  EXPECT_TRUE(run_optimized(f32_between, in).identical(run_optimized(bf16_between, in)));
  // The reference kernels (no bf16 compute) honour the attribute: fc2 then reads the GELU output rounded
  // to bf16, which moves the result by less than the bf16 build's own distance from the f32 graph.
  InterpreterOptions ref_opt;
  ref_opt.use_optimized_kernels = false;
  const Tensor ref_f32 = Interpreter(f32_between, ref_opt).run({{"x", in}}).at("y");
  const Tensor ref_bf16 = Interpreter(bf16_between, ref_opt).run({{"x", in}}).at("y");
  const double moved = max_abs_diff(ref_bf16, ref_f32);
  EXPECT_GT(moved, 0.0);
  EXPECT_LT(moved, max_abs_diff(run_optimized(bf16_between, in), ref_f32));
}

TEST(Bf16BetweenLinears, OnlyWhereEveryReaderIsABf16Linear) {
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t D = 16, H = 24;
  int x = b.input("x", DType::f32, {4, D});
  int h1 = L::linear_t(b, x, random_tensor({H, D}, 20), random_tensor({H}, 21), "fc_a");  // read by fc_b and Relu
  int h2 = L::linear_t(b, h1, random_tensor({D, H}, 22), random_tensor({D}, 23), "fc_b");
  b.output(L::relu(b, h1), "r");
  int h3 = L::linear_t(b, x, random_tensor({H, D}, 24), random_tensor({H}, 25), "fc_c");  // a graph output too
  b.output(h3, "c");
  b.output(L::linear_t(b, h3, random_tensor({D, H}, 26), random_tensor({D}, 27), "fc_d"), "d");
  int h5 = L::linear_t(b, x, random_tensor({H, D}, 28), random_tensor({H}, 29), "fc_e");  // the residual of fc_f
  b.output(L::add(b, L::linear_t(b, h5, random_tensor({H, H}, 30), random_tensor({H}, 31), "fc_f"), h5), "f");
  b.output(h2, "y");
  ir::Graph c16 = g, c32 = g;
  compiler::run_passes(c16, compiler::default_passes("bf16"), {});
  compiler::run_passes(c32, compiler::default_passes("fp32"), {});
  for (const ir::Graph* c : {&c16, &c32})
    for (auto& n : c->nodes) EXPECT_EQ(n.attr_int(ir::kLinearBf16Output, 0), 0) << n.name;
}

// Bit patterns where rounding to bf16 is easy to get wrong: ties to even both ways, carries into the
// exponent, the largest finite values (rounding to infinity), infinities, NaNs with payloads and signs
// (quieted, payload's top bits kept), denormals, zeros.
TEST(Bf16Roundings, FoldedGeluRoundsSpecialValuesAsCastDoes) {
  const std::vector<uint32_t> bits = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3f7fffffu, 0xbf808000u, 0xbf818000u,
                                      0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                      0x7f800001u, 0xff812345u, 0x7fbfffffu, 0x00000001u, 0x807fffffu, 0x00008000u,
                                      0x00000000u, 0x80000000u, 0x40490fdbu, 0xc0a00000u, 0x3ea8f5c3u, 0x4120ffffu};
  Tensor in(DType::f32, {int64_t(bits.size())});
  std::memcpy(in.raw(), bits.data(), bits.size() * 4);
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {int64_t(bits.size())});
  b.output(L::round_to_bf16(b, L::gelu_erf(b, L::round_to_bf16(b, x))), "y");
  ir::Graph kept = compiled(g, false, "fp32"), folded = compiled(g, true, "fp32");
  ASSERT_EQ(count_ops(folded, "Cast"), 0);
  EXPECT_TRUE(run_optimized(kept, in).identical(run_optimized(folded, in)));
  InterpreterOptions ref_opt;
  ref_opt.use_optimized_kernels = false;
  EXPECT_TRUE(Interpreter(kept, ref_opt)
                  .run({{"x", in}})
                  .at("y")
                  .identical(Interpreter(folded, ref_opt).run({{"x", in}}).at("y")));
}

}  // namespace
}  // namespace segmux::testing_cpu
