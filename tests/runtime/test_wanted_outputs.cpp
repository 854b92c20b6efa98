// Executor::run(inputs, wanted): only the named outputs are copied out, with the values a full run
// gives; a name that is not an output is an error naming it.
#include <gtest/gtest.h>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "core/error.h"
#include "ir/builder.h"
#include "runtime/executor.h"

using namespace segmux;

namespace {

compiler::CompileResult two_outputs() {
  ir::Graph g;
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 8});
  int h = b.op1("MatMul", {x, b.constant(test::random_tensor({8, 8}, 3), "w")});
  b.output(b.op1("Tanh", {h}), "a");
  b.output(b.op1("Sigmoid", {h}), "b");
  return compiler::compile_graph(g);
}

}  // namespace

TEST(ExecutorWantedOutputs, OnlyTheNamedOnesWithTheFullRunsValues) {
  auto c = two_outputs();
  Executor e(c.graph, c.plan);
  std::map<std::string, Tensor> in{{"x", test::random_tensor({4, 8}, 9)}};
  auto all = e.run(in);
  ASSERT_EQ(all.size(), 2u);
  auto only_b = e.run(in, {"b"});
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_TRUE(only_b.at("b").identical(all.at("b")));
  auto none = e.run(in, {});
  EXPECT_TRUE(none.empty());
  try {
    e.run(in, {"a", "nope"});
    FAIL() << "an unknown output name must be refused";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("'nope' is not an output"), std::string::npos) << err.what();
  }
}
