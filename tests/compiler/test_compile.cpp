// compile_graph's inputs: a graph whose inputs have no fixed shape compiles only when the caller
// gives the shapes (by input name; an unknown name is an error).
#include <gtest/gtest.h>

#include "compiler/compile.h"

using namespace segmux;

TEST(CompileGraph, RequiresFixedInputShapes) {
  ir::Graph g;
  g.inputs.push_back(g.add_value("x", DType::f32));
  int y = g.add_value("y", DType::f32);
  g.nodes.push_back(ir::Node{"Relu", "", "r", {0}, {y}, {}});
  g.outputs.push_back(y);
  EXPECT_THROW(compiler::compile_graph(g), Error);
  compiler::CompileOptions opt;
  opt.input_shapes["x"] = {3, 4};
  auto r = compiler::compile_graph(g, opt);
  EXPECT_EQ(r.graph.value(r.graph.outputs[0]).shape, (Shape{3, 4}));
  opt.input_shapes = {{"nope", {1}}};
  EXPECT_THROW(compiler::compile_graph(g, opt), Error);
}
