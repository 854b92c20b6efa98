// The compiled-model executor against the eager Interpreter: the route's known miscompilation patterns
// (a write into a copy of a value that is still read later, view aliases, data-dependent shapes) and
// arena reuse across runs.
#include <gtest/gtest.h>

#include <random>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "ir/builder.h"
#include "runtime/executor.h"
#include "runtime/interpreter.h"

using namespace segmux;
using ir::GraphBuilder;

namespace {

using test::random_tensor;

void expect_identical(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(t.identical(b.at(name))) << name << ": compiled differs from eager";
  }
}

void compare_compiled_with_eager(const ir::Graph& g, const std::map<std::string, Tensor>& in) {
  Interpreter eager(g, InterpreterOptions{1, false});
  auto expected = eager.run(in);
  auto c = compiler::compile_graph(g);
  Executor exec(c.graph, c.plan, ExecutorOptions{1, false});
  expect_identical(expected, exec.run(in));
  expect_identical(expected, exec.run(in));  // the reused arena gives the same answer again
}

}  // namespace

TEST(Executor, WriteIntoACopyKeepsTheOriginal) {
  // a is read after s = ScatterND(a, ...) "writes" into it: the compiled model must not let the
  // scatter's output share a's bytes while a is still needed.
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 6});
  int a = b.op1("Relu", {x});
  int idx = b.constant(Tensor::from_vector<int64_t>({2, 1}, {1, 3}), "idx");
  int upd = b.constant(random_tensor({2, 6}, 1), "upd");
  int s = b.op1("ScatterND", {a, idx, upd});
  int sl = b.op1("Slice", {s, b.ints({0}), b.ints({2}), b.ints({0})});
  b.output(b.op1("Add", {a, b.op1("Sigmoid", {s})}), "mix");
  b.output(sl, "head");
  b.output(a, "a");
  compare_compiled_with_eager(g, {{"x", random_tensor({4, 6}, 2)}});
}

TEST(Executor, ViewAliasesStayAliveAsLongAsTheirBuffer) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3, 4});
  int a = b.op1("Tanh", {x});
  int r = b.op1("Reshape", {a, b.ints({6, 4})});  // view of a
  int u = b.op1("Unsqueeze", {r, b.ints({0})});   // view of a view
  int f = b.op1("Flatten", {u}, {{"axis", int64_t(1)}});
  int late = b.op1("Mul", {a, b.op1("Exp", {x})});  // a read again after the views
  b.output(b.op1("Relu", {f}), "flat");
  b.output(late, "late");
  b.output(r, "view_out");  // a view that is itself an output
  auto c = compiler::compile_graph(g);
  int views = 0;
  for (char v : c.plan.view_nodes) views += v;
  EXPECT_GE(views, 1);
  compare_compiled_with_eager(g, {{"x", random_tensor({2, 3, 4}, 3)}});
}

TEST(Executor, DataDependentShapesRunPerCall) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {8});
  int nz = b.op1("NonZero", {b.op1("Relu", {x})});
  b.output(b.op1("Transpose", {nz}), "where");
  b.output(b.op1("Neg", {x}), "neg");
  Interpreter eager(g, InterpreterOptions{1, false});
  auto c = compiler::compile_graph(g);
  Executor exec(c.graph, c.plan, ExecutorOptions{1, false});
  for (uint32_t seed : {4u, 5u, 6u}) {
    std::map<std::string, Tensor> in{{"x", random_tensor({8}, seed)}};
    expect_identical(eager.run(in), exec.run(in));
  }
}

TEST(Executor, OutputsOwnTheirMemory) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {16});
  b.output(b.op1("Relu", {b.op1("Neg", {x})}), "y");
  auto c = compiler::compile_graph(g);
  Executor exec(c.graph, c.plan);
  Tensor in1 = random_tensor({16}, 7);
  auto first = exec.run({{"x", in1}});
  Tensor keep = first.at("y").clone();
  exec.run({{"x", random_tensor({16}, 8)}});
  EXPECT_TRUE(first.at("y").identical(keep));  // not overwritten by the second run
}

// Concat inputs and Split outputs on their slice of the whole (compiler/memory_planner.h): producers
// write the concatenation in place, Split's outputs are views, a value read again later keeps its bytes,
// and what cannot be placed (a leading dim > 1, a nested concatenation, a repeated input) is copied.
TEST(Executor, ConcatAndSplitPiecesInPlace) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {1, 4, 16});
  int a = b.op1("Tanh", {x});
  int c = b.op1("Concat", {a, b.op1("Sigmoid", {x}), a}, {{"axis", int64_t(1)}});  // [1, 12, 16]
  int late = b.op1("Mul", {a, x});                                                 // a read after the concat
  std::vector<int> parts = b.op("Split", {b.op1("Neg", {c}), b.ints({2, 6, 4})}, {{"axis", int64_t(1)}}, 3);
  int nested = b.op1("Concat", {c, parts[0]}, {{"axis", int64_t(1)}});  // c already holds slices
  int x2 = b.op1("Reshape", {x, b.ints({2, 2, 16})});
  int wide = b.op1("Concat", {b.op1("Exp", {x2}), b.op1("Abs", {x2})}, {{"axis", int64_t(1)}});  // [2, 4, 16]
  b.output(b.op1("Relu", {parts[0]}), "p0");
  b.output(parts[1], "p1");
  b.output(b.op1("Add", {parts[2], parts[2]}), "p2");
  b.output(late, "late");
  b.output(nested, "nested");
  b.output(wide, "wide");
  auto compiled = compiler::compile_graph(g);
  const MemoryPlan& plan = compiled.plan;
  const ir::Node* concat = nullptr;
  const ir::Node* split = nullptr;
  for (const ir::Node& n : compiled.graph.nodes) {
    if (n.op_type == "Concat" && !concat) concat = &n;
    if (n.op_type == "Split") split = &n;
  }
  ASSERT_TRUE(concat && split);
  const int64_t whole = plan.offsets[size_t(concat->outputs[0])];
  EXPECT_EQ(plan.offsets[size_t(concat->inputs[0])], whole);           // a, at the start
  EXPECT_EQ(plan.offsets[size_t(concat->inputs[1])], whole + 4 * 64);  // sigmoid, after a's 4 x 16 floats
  const int64_t split_in = plan.offsets[size_t(split->inputs[0])];
  EXPECT_EQ(plan.offsets[size_t(split->outputs[1])], split_in + 2 * 64);
  EXPECT_EQ(plan.offsets[size_t(split->outputs[2])], split_in + 8 * 64);
  const std::map<std::string, Tensor> in = {{"x", random_tensor({1, 4, 16}, 4)}};
  compare_compiled_with_eager(g, in);
  Interpreter eager(g, InterpreterOptions{2, true});
  Executor optimized(compiled.graph, compiled.plan, ExecutorOptions{2, true});
  expect_identical(eager.run(in), optimized.run(in));
}

// A Slice that is one contiguous run of at least half its input sits on the input's bytes (the
// propagation decoder's memory tokens without the object pointers): the kernel finds its output already
// there. The small run after it, read later, gets bytes of its own and keeps its values.
TEST(Executor, ContiguousSliceOnItsInput) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {1, 40, 16});
  int t = b.op1("Tanh", {x});
  const auto slice = [&](int64_t from, int64_t to) {
    return b.op1("Slice", {t, b.ints({from}), b.ints({to}), b.ints({1})});
  };
  int head = slice(0, 36), tail = slice(36, 40);
  b.output(b.op1("Sigmoid", {head}), "head");
  b.output(b.op1("Neg", {b.op1("Exp", {tail})}), "tail");
  auto compiled = compiler::compile_graph(g);
  const ir::Node* leading = nullptr;
  for (const ir::Node& n : compiled.graph.nodes)
    if (n.op_type == "Slice" && compiled.graph.value(n.outputs[0]).shape == Shape({1, 36, 16})) leading = &n;
  ASSERT_TRUE(leading);
  EXPECT_EQ(compiled.plan.offsets[size_t(leading->outputs[0])], compiled.plan.offsets[size_t(leading->inputs[0])]);
  const std::map<std::string, Tensor> in = {{"x", random_tensor({1, 40, 16}, 5)}};
  compare_compiled_with_eager(g, in);
  Interpreter eager(g, InterpreterOptions{2, true});
  Executor optimized(compiled.graph, compiled.plan, ExecutorOptions{2, true});
  expect_identical(eager.run(in), optimized.run(in));
}
