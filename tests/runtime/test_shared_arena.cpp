// Executors sharing one arena (SharedArena: the candidates of a tracked frame run one after another):
// the arena is as large as the largest plan, results equal those of executors with their own arenas,
// whatever the order of runs, and growing the arena after an executor ran is safe.
#include <gtest/gtest.h>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "ir/builder.h"
#include "runtime/executor.h"

using namespace segmux;
using ir::GraphBuilder;
using test::random_tensor;

namespace {

compiler::CompileResult chain(int64_t n, int depth, uint32_t seed) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {n, 16});
  int h = x;
  for (int i = 0; i < depth; ++i) {
    h = b.op1("MatMul", {h, b.constant(random_tensor({16, 16}, seed + uint32_t(i)), "w" + std::to_string(i))});
    h = b.op1(i % 2 ? "Tanh" : "Sigmoid", {h});
  }
  b.output(b.op1("Add", {h, x}), "y");
  return compiler::compile_graph(g);
}

}  // namespace

TEST(SharedArena, LargestPlanAndSameResultsInAnyOrder) {
  auto small = chain(8, 3, 1), large = chain(512, 6, 10);
  ASSERT_LT(small.plan.arena_bytes, large.plan.arena_bytes);
  Executor own_small(small.graph, small.plan), own_large(large.graph, large.plan);
  auto arena = std::make_shared<SharedArena>();
  ExecutorOptions opt;
  opt.shared_arena = arena;
  Executor a(small.graph, small.plan, opt);
  std::map<std::string, Tensor> in_small{{"x", random_tensor({8, 16}, 5)}},
      in_large{{"x", random_tensor({512, 16}, 6)}};
  auto first = a.run(in_small);  // runs before the arena grows for the large model
  Executor b(large.graph, large.plan, opt);
  EXPECT_EQ(arena->bytes(), large.plan.arena_bytes);
  const auto want_small = own_small.run(in_small).at("y"), want_large = own_large.run(in_large).at("y");
  EXPECT_TRUE(first.at("y").identical(want_small));
  for (int i = 0; i < 3; ++i) {
    auto yb = b.run(in_large).at("y");
    auto ya = a.run(in_small).at("y");
    EXPECT_TRUE(yb.identical(want_large)) << i;
    EXPECT_TRUE(ya.identical(want_small)) << i;
  }
  // Outputs are copies: a later run of the other executor does not change them.
  auto kept = a.run(in_small).at("y");
  b.run(in_large);
  EXPECT_TRUE(kept.identical(want_small));
}
