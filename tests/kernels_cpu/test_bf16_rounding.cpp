// The bf16 build's rounding pass (compiler/passes/bf16_rounding.cpp) on the official bf16 MLP pattern
// of the ViT (x, fc1 output and GELU output rounded to bf16 by Cast pairs): which Casts go, that fc1
// and GELU fuse, and what the optimized kernels compute before and after.
#include "compiler/pass_manager.h"
#include "compiler/passes.h"
#include "harness.h"
#include "models/sam31/layers.h"
#include "runtime/session.h"

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
  SessionOptions o;
  o.num_threads = 2;
  o.use_optimized_kernels = true;
  Session s(g, o);
  return s.run({{"x", x}}).at("y");
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::fabs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return m;
}

// The passes of a bf16 build, with or without the rounding pass.
ir::Graph compiled(const ir::Graph& g, bool drop_roundings) {
  ir::Graph c = g;
  compiler::PassManagerOptions opt;
  if (!drop_roundings) opt.skip.insert("bf16-roundings");
  compiler::run_passes(c, compiler::default_passes("bf16"), opt);
  return c;
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
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t D = 48, H = 96;
  int x = b.input("x", DType::f32, {2, 9, D});
  int h = L::linear_t(b, L::round_to_bf16(b, x), random_tensor({H, D}, 5), random_tensor({H}, 6), "fc1");
  h = L::round_to_bf16(b, L::gelu_erf(b, L::round_to_bf16(b, h)));
  int y = L::add(b, x, L::linear_t(b, h, random_tensor({D, H}, 7), random_tensor({D}, 8), "fc2"));
  b.output(y, "y");
  ir::Graph kept = compiled(g, false), dropped = compiled(g, true);
  EXPECT_EQ(count_ops(kept, "Cast"), 6);
  EXPECT_EQ(count_ops(dropped, "Cast"), 0);
  EXPECT_EQ(count_ops(dropped, "Gelu"), 0);
  int gelu = 0;
  for (auto& n : dropped.nodes) gelu += n.op_type == "Linear" && n.attr_string("activation", "") == "gelu";
  EXPECT_EQ(gelu, 1);
  // Only GELU's input is no longer rounded (one bf16 rounding, relative 2^-9): the change is smaller
  // than the bf16 build's own distance from the fp32 graph (reference kernels, which ignore bf16).
  Tensor in = random_tensor({2, 9, D}, 9);
  SessionOptions ref_opt;
  ref_opt.use_optimized_kernels = false;
  const Tensor want = Session(g, ref_opt).run({{"x", in}}).at("y");
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

}  // namespace
}  // namespace segmux::testing_cpu
