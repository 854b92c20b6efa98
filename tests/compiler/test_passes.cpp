// Each compiler pass on small graphs: what it changes, that outputs keep their names, and that the
// result computes the same as the original graph (Interpreter, reference kernels).
#include <gtest/gtest.h>

#include <random>

#include "common/random_tensor.h"
#include "compiler/pass_manager.h"
#include "compiler/passes.h"
#include "ir/builder.h"
#include "runtime/interpreter.h"

using namespace segmux;
using ir::GraphBuilder;

namespace {

using test::random_tensor;

std::map<std::string, Tensor> run_ref(const ir::Graph& g, const std::map<std::string, Tensor>& in) {
  Interpreter s(g, InterpreterOptions{1, false});
  return s.run(in);
}

void expect_same_outputs(const ir::Graph& before, const ir::Graph& after, const std::map<std::string, Tensor>& in) {
  auto a = run_ref(before, in), b = run_ref(after, in);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << "output '" << name << "' disappeared";
    EXPECT_TRUE(t.identical(b.at(name))) << "output '" << name << "' changed";
  }
}

int count_op(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.op_type == op;
  return n;
}

}  // namespace

TEST(Passes, ConstantFoldingRunsConstantNodes) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3});
  int c1 = b.constant(random_tensor({2, 3}, 1), "c1");
  int c2 = b.constant(random_tensor({2, 3}, 2), "c2");
  int sum = b.op1("Add", {c1, c2});
  int rel = b.op1("Relu", {sum});
  b.output(b.op1("Mul", {x, rel}), "y");
  ir::Graph before = g;
  EXPECT_TRUE(compiler::fold_constants(g));
  EXPECT_EQ(count_op(g, "Add"), 0);
  EXPECT_EQ(count_op(g, "Relu"), 0);
  EXPECT_EQ(count_op(g, "Mul"), 1);
  EXPECT_FALSE(compiler::fold_constants(g));  // nothing left to fold
  expect_same_outputs(before, g, {{"x", random_tensor({2, 3}, 3)}});
}

TEST(Passes, ConstantFoldingCapsGrowth) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {1024, 1024});
  int one = b.scalar_f32(1.0f);
  int big = b.op1("Expand", {one, b.ints({1024, 1024})});  // 4 MiB from 12 bytes of constants
  b.output(b.op1("Add", {x, big}), "y");
  compiler::FoldOptions opt;
  opt.max_growth_bytes = 1 << 20;
  EXPECT_FALSE(compiler::fold_constants(g, opt));
  EXPECT_EQ(count_op(g, "Expand"), 1);
  opt.max_growth_bytes = 8 << 20;
  EXPECT_TRUE(compiler::fold_constants(g, opt));
  EXPECT_EQ(count_op(g, "Expand"), 0);
}

TEST(Passes, ShapeChainsFoldToConstants) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the usual exported flatten.
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3, 4});
  int shape = b.op1("Shape", {x});
  int d0 = b.op1("Gather", {shape, b.ints({0})}, {{"axis", int64_t(0)}});
  int target = b.op1("Concat", {d0, b.ints({-1})}, {{"axis", int64_t(0)}});
  int size = b.op1("Size", {x});
  b.output(b.op1("Reshape", {x, target}), "y");
  b.output(size, "n");
  ir::Graph before = g;
  auto report = compiler::run_passes(g, compiler::default_passes());
  EXPECT_EQ(count_op(g, "Shape"), 0);
  EXPECT_EQ(count_op(g, "Gather"), 0);
  EXPECT_EQ(count_op(g, "Concat"), 0);
  EXPECT_EQ(count_op(g, "Size"), 0);
  EXPECT_EQ(count_op(g, "Reshape"), 1);
  const Tensor* n = g.initializer(g.outputs[1]);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->data<int64_t>()[0], 24);
  EXPECT_GE(report.rounds, 2);
  expect_same_outputs(before, g, {{"x", random_tensor({2, 3, 4}, 4)}});
}

TEST(Passes, DeadCodeIsRemoved) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4});
  b.op1("Sigmoid", {b.op1("Relu", {x})});  // unused branch
  b.output(b.op1("Relu", {x}), "y");
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_TRUE(compiler::eliminate_dead_code(g));
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_FALSE(compiler::eliminate_dead_code(g));
}

TEST(Passes, IdentityBeforeGraphOutputKeepsTheOutput) {
  // The route's pitfall: removing an Identity alias must not leave a graph output dangling.
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4});
  int r = b.op1("Relu", {x});
  b.output(b.op1("Identity", {r}), "y");
  b.output(b.op1("Identity", {x}), "x_copy");  // input passthrough: must stay
  int s = b.op1("Sigmoid", {x});
  b.output(s, "s");
  b.output(b.op1("Identity", {s}), "s_alias");  // s is already an output: must stay
  ir::Graph before = g;
  EXPECT_TRUE(compiler::eliminate_noops(g));
  ASSERT_NO_THROW(ir::verify(g));
  EXPECT_EQ(count_op(g, "Identity"), 2);
  std::vector<std::string> names;
  for (int v : g.outputs) names.push_back(g.value(v).name);
  EXPECT_EQ(names, (std::vector<std::string>{"y", "x_copy", "s", "s_alias"}));
  expect_same_outputs(before, g, {{"x", random_tensor({4}, 5)}});
}

TEST(Passes, NoopsAreRemoved) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3});
  int c = b.op1("Cast", {x}, {{"to", int64_t(1)}});  // f32 -> f32
  int r = b.op1("Reshape", {c, b.ints({2, 3})});
  int t = b.op1("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 1}}});
  int d = b.op1("Dropout", {t});
  b.output(b.op1("Relu", {d}), "y");
  ir::Graph before = g;
  EXPECT_TRUE(compiler::eliminate_noops(g));
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Relu");
  expect_same_outputs(before, g, {{"x", random_tensor({2, 3}, 6)}});
}

TEST(Passes, CommonSubexpressionsMerge) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4});
  int a1 = b.op1("Add", {x, b.scalar_f32(2.0f)});
  int a2 = b.op1("Add", {x, b.scalar_f32(2.0f)});  // same op, equal constant
  int a3 = b.op1("Add", {x, b.scalar_f32(3.0f)});  // different constant
  b.output(b.op1("Mul", {a1, a2}), "y");
  b.output(a3, "z");
  ir::Graph before = g;
  EXPECT_TRUE(compiler::eliminate_common_subexpressions(g));
  EXPECT_EQ(count_op(g, "Add"), 2);
  expect_same_outputs(before, g, {{"x", random_tensor({4}, 7)}});
}

TEST(Passes, CseKeepsDistinctGraphOutputs) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4});
  b.output(b.op1("Relu", {x}), "y1");
  b.output(b.op1("Relu", {x}), "y2");
  compiler::eliminate_common_subexpressions(g);
  ASSERT_NO_THROW(ir::verify(g));
  EXPECT_EQ(g.value(g.outputs[0]).name, "y1");
  EXPECT_EQ(g.value(g.outputs[1]).name, "y2");
}

TEST(Passes, PrecisionMarksWeightedMatMuls) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 8});
  int w = b.constant(random_tensor({8, 4}, 8), "w");
  int y = b.op1("MatMul", {x, w});
  int z = b.op1("MatMul", {y, b.op1("Transpose", {y})});  // no constant weight: untouched
  b.output(z, "z");
  EXPECT_TRUE(compiler::mark_bf16_precision(g));
  EXPECT_EQ(g.nodes[0].attr_string(compiler::kPrecisionAttr, ""), "bf16");
  EXPECT_EQ(g.nodes[2].attr_string(compiler::kPrecisionAttr, ""), "");
  EXPECT_FALSE(compiler::mark_bf16_precision(g));
  // Only the bf16 list contains the precision pass.
  auto names32 = compiler::known_pass_names("fp32");
  auto names16 = compiler::known_pass_names("bf16");
  EXPECT_EQ(std::count(names32.begin(), names32.end(), "precision-bf16"), 0);
  EXPECT_EQ(std::count(names16.begin(), names16.end(), "precision-bf16"), 1);
  EXPECT_THROW(compiler::default_passes("int4"), Error);
}

TEST(Passes, PrecisionMarksF32Attention) {
  ir::Graph g;
  GraphBuilder b(g);
  int q = b.input("q", DType::f32, {1, 2, 6, 8});
  int k = b.input("k", DType::f32, {1, 2, 5, 8});
  int v = b.input("v", DType::f32, {1, 2, 5, 8});
  int a = b.op1("Attention", {q, k, v}, {}, "segmux");
  int m = b.input("m", DType::f32, {1, 1, 6, 5});
  int a16 = b.op1("Attention", {b.op1("Cast", {q}, {{"to", ir::AttrValue(int64_t(16))}}), k, v}, {}, "segmux");
  int am = b.op1("Attention", {q, k, v, m}, {}, "segmux");
  b.output(a, "a");
  b.output(a16, "a16");
  b.output(am, "am");
  EXPECT_TRUE(compiler::mark_bf16_precision(g));
  int marked = 0, attention = 0;
  for (auto& n : g.nodes) {
    if (n.op_type != "Attention") continue;
    ++attention;
    // No weight, yet marked: its q, k, v are computed f32 tensors (the bf16 tile rounds them), with or
    // without a mask (the official predictor's SDPA runs in bf16 either way: docs/bf16.md). Not with a
    // bf16 q.
    const bool want = g.value(n.inputs[0]).dtype == DType::f32;
    EXPECT_EQ(n.attr_string(compiler::kPrecisionAttr, ""), want ? "bf16" : "") << n.name;
    marked += want;
  }
  EXPECT_EQ(attention, 3);
  EXPECT_EQ(marked, 2);
  EXPECT_FALSE(compiler::mark_bf16_precision(g));
}

TEST(PassManager, SkipsByNameAndReportsStats) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4});
  int c = b.op1("Add", {b.scalar_f32(1.0f), b.scalar_f32(2.0f)});
  b.output(b.op1("Add", {x, c}), "y");
  compiler::PassManagerOptions opt;
  opt.skip = {"fold-constants"};
  opt.verify_each = true;
  ir::Graph g1 = g;
  auto r1 = compiler::run_passes(g1, compiler::default_passes(), opt);
  EXPECT_EQ(count_op(g1, "Add"), 2);
  for (auto& p : r1.passes)
    if (p.name == "fold-constants") {
      EXPECT_EQ(p.runs, 0);
    }
  auto r2 = compiler::run_passes(g, compiler::default_passes());
  EXPECT_EQ(count_op(g, "Add"), 1);
  bool found = false;
  for (auto& p : r2.passes)
    if (p.name == "fold-constants") {
      found = true;
      EXPECT_GE(p.changes, 1);
      EXPECT_EQ(p.nodes_removed, 1);
    }
  EXPECT_TRUE(found);
  EXPECT_NE(r2.to_json().find("fold-constants"), std::string::npos);
  opt.skip = {"no-such-pass"};
  EXPECT_THROW(compiler::run_passes(g, compiler::default_passes(), opt), Error);
}
