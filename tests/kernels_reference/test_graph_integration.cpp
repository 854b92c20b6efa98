// The schemas as model code meets them (GraphBuilder infers as nodes are added) and the reference
// kernels as the Interpreter runs them.
#include "ref_test_util.h"

#include "ir/builder.h"
#include "runtime/interpreter.h"

using namespace segmux;
using namespace segmux::test;

TEST(RefGraph, BuilderSeesShapesAndSessionRunsReferenceKernels) {
  ir::Graph g;
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3});
  int w = b.constant(f32({3, 2}, {1, 0, 0, 1, 1, 1}), "w");
  int y = b.op1("MatMul", {x, w});
  EXPECT_EQ(b.shape(y), (Shape{2, 2}));
  int r = b.op1("Reshape", {y, b.ints({-1})});
  EXPECT_EQ(b.shape(r), (Shape{4}));
  int s = b.op1("Softmax", {b.op1("Unsqueeze", {r, b.ints({0})})});
  EXPECT_EQ(b.shape(s), (Shape{1, 4}));
  int sl = b.op1("Slice", {s, b.ints({1}), b.ints({3}), b.ints({1})});
  EXPECT_EQ(b.shape(sl), (Shape{1, 2}));
  // A shape computed from data is unknown to the builder but known when the session runs.
  int shp = b.op1("Shape", {x});
  int dyn = b.op1("Reshape", {x, b.op1("Concat", {b.op1("Slice", {shp, b.ints({1}), b.ints({2})}), b.ints({-1})},
                                       {{"axis", int64_t(0)}})});
  EXPECT_FALSE(g.value(dyn).has_shape);
  b.output(sl, "probs");
  b.output(dyn, "reshaped");
  InterpreterOptions opt;
  opt.use_optimized_kernels = false;
  Interpreter sess(g, opt);
  auto out = sess.run({{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  // y = [[4, 5], [10, 11]] -> softmax over [4, 5, 10, 11].
  const double z = std::exp(4.0) + std::exp(5.0) + std::exp(10.0) + std::exp(11.0);
  expect_tensor(out.at("probs"), {1, 2}, {std::exp(5.0) / z, std::exp(10.0) / z}, 1e-7);
  expect_tensor(out.at("reshaped"), {3, 2}, {1, 2, 3, 4, 5, 6});
  for (const std::string& p : sess.node_providers()) EXPECT_EQ(p, "reference");
}

TEST(RefGraph, SchemaErrorsSurfaceAtTheBuilderLine) {
  ir::Graph g;
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3});
  EXPECT_THROW(b.op1("MatMul", {x, x}), Error);
  EXPECT_THROW(b.op1("Reshape", {x, b.ints({4, -1})}), Error);
  EXPECT_THROW(b.op1("NoSuchOp", {x}), Error);
  EXPECT_THROW(b.op1("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2}}}), Error);
}

TEST(RefGraph, EveryReferenceOpHasASchema) {
  // Each schema'd op is runnable by the reference provider (the list of ops segmux supports).
  int count = 0;
  for (const ir::OpSchema* s : ir::all_schemas()) {
    if (!s->domain.empty()) continue;  // fused segmux ops belong to the compiler's helpers
    ir::Node n;
    n.op_type = s->op_type;
    n.domain = s->domain;
    KernelInit init{n, {}, {}, {}, 1};
    EXPECT_NE(reference_provider().make(init), nullptr) << s->domain << "::" << s->op_type;
    ++count;
  }
  EXPECT_GE(count, 140);
}
