// Executor construction makes its kernels (and prepacks their weights) on all its threads: the kernels
// must be the same as those of a build on one thread, down to the bits of every output.
#include <gtest/gtest.h>
#include <omp.h>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "ir/builder.h"
#include "runtime/executor.h"

using namespace segmux;
using ir::GraphBuilder;

namespace {

using test::random_tensor;

// Matmuls with constant weights of several shapes (each prepacked into oneDNN's layout), a convolution
// and element-wise nodes between them: many independent kernels to make.
ir::Graph weighted_graph() {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {6, 24});
  uint32_t seed = 10;
  int h = x;
  for (int64_t width : {32, 40, 24, 48, 24, 56, 24}) {
    const int64_t in = g.value(h).shape.back();
    int w = b.constant(random_tensor({in, width}, seed++), "w");
    int bias = b.constant(random_tensor({width}, seed++), "b");
    h = b.op1("Relu", {b.op1("Add", {b.op1("MatMul", {h, w}), bias})});
  }
  b.output(h, "mlp");
  int img = b.input("img", DType::f32, {1, 3, 10, 10});
  int kw = b.constant(random_tensor({8, 3, 3, 3}, seed++), "kw");
  int kb = b.constant(random_tensor({8}, seed++), "kb");
  b.output(b.op1("Conv", {img, kw, kb}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "conv");
  return g;
}

}  // namespace

TEST(ParallelBuild, KernelsMadeOnManyThreadsEqualThoseMadeOnOne) {
  auto c = compiler::compile_graph(weighted_graph());
  const std::map<std::string, Tensor> in{{"x", random_tensor({6, 24}, 1)}, {"img", random_tensor({1, 3, 10, 10}, 2)}};
  const ExecutorOptions options{4, true, nullptr};
  // No OpenMP region may be active: the first executor's kernels are made one after the other.
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(0);
  Executor serial(c.graph, c.plan, options);
  omp_set_max_active_levels(levels);
  Executor parallel(c.graph, c.plan, options);

  EXPECT_GT(serial.prepacked_bytes(), 0u);  // the oneDNN kernels did prepack
  EXPECT_EQ(serial.prepacked_bytes(), parallel.prepacked_bytes());
  EXPECT_EQ(serial.node_providers(), parallel.node_providers());
  for (int repeat = 0; repeat < 2; ++repeat) {
    auto a = serial.run(in), b = parallel.run(in);
    ASSERT_EQ(a.size(), b.size());
    for (auto& [name, t] : a) EXPECT_TRUE(t.identical(b.at(name))) << name;
  }
}
