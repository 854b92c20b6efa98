// The executor's per-node observer and the profiler built on it (segmux bench --profile): the Chrome
// trace parses, holds one event per executed node and run, the events lie inside their run and do not
// overlap, and the FLOP estimates match hand counts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "ir/builder.h"
#include "runtime/executor.h"
#include "runtime/profiler.h"

using namespace segmux;
using ir::GraphBuilder;
using test::random_tensor;

namespace {

ir::Graph conv_matmul_graph() {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {1, 8, 16, 16});
  int c = b.op1("Conv", {x, b.constant(random_tensor({16, 8, 3, 3}, 1), "w"), b.constant(random_tensor({16}, 2), "b")},
                {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  int r = b.op1("Relu", {c});
  int f = b.op1("Reshape", {r, b.ints({16, 256})});  // a view: no kernel runs
  int m = b.op1("MatMul", {f, b.constant(random_tensor({256, 64}, 3), "m")});
  b.output(b.op1("Sigmoid", {m}), "y");
  return g;
}

}  // namespace

TEST(Profiler, ObserverSeesEveryExecutedNodeOnlyWhenSet) {
  auto c = compiler::compile_graph(conv_matmul_graph());
  Executor exec(c.graph, c.plan, ExecutorOptions{1, true});
  size_t executed = 0;
  for (char v : c.plan.view_nodes) executed += v ? 0 : 1;
  std::map<std::string, Tensor> in{{"x", random_tensor({1, 8, 16, 16}, 4)}};
  std::vector<size_t> seen;
  exec.set_node_observer([&](const NodeRun& r) {
    EXPECT_LE(r.start, r.end);
    EXPECT_FALSE(c.plan.view_nodes[r.index]);
    seen.push_back(r.index);
  });
  auto with = exec.run(in);
  EXPECT_EQ(seen.size(), executed);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  exec.set_node_observer(nullptr);
  auto without = exec.run(in);
  EXPECT_EQ(seen.size(), executed);  // off: no more calls
  EXPECT_TRUE(with.at("y").identical(without.at("y")));
}

TEST(Profiler, ChromeTraceHasOneEventPerNodeAndRun) {
  auto c = compiler::compile_graph(conv_matmul_graph());
  Executor exec(c.graph, c.plan, ExecutorOptions{1, true});
  size_t executed = 0;
  for (char v : c.plan.view_nodes) executed += v ? 0 : 1;
  std::map<std::string, Tensor> in{{"x", random_tensor({1, 8, 16, 16}, 5)}};
  ExecutorProfiler prof(exec);
  exec.run(in);  // not between begin_run/end_run: not recorded
  const int runs = 3;
  for (int i = 0; i < runs; ++i) {
    prof.begin_run();
    exec.run(in);
    prof.end_run();
  }
  auto j = nlohmann::json::parse(prof.chrome_trace_json());
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::vector<std::pair<double, double>> run_span(runs);
  std::vector<std::vector<std::pair<double, double>>> nodes(runs);
  std::map<std::string, int> per_op;
  int counters = 0;
  for (auto& e : j["traceEvents"]) {
    if (e["ph"] == "C") {  // the RSS counter track
      EXPECT_GT(e["args"]["rss"].get<double>(), 0);
      ++counters;
      continue;
    }
    EXPECT_EQ(e["ph"], "X");
    ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["name"].is_string() && e["cat"].is_string());
    EXPECT_GE(e["dur"].get<double>(), 0);
    int r = e["args"]["run"].get<int>();
    ASSERT_TRUE(r >= 0 && r < runs);
    std::pair<double, double> span{e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
    if (e["cat"] == "run") {
      run_span[size_t(r)] = span;
    } else {
      nodes[size_t(r)].push_back(span);
      ++per_op[e["cat"].get<std::string>()];
      EXPECT_TRUE(e["args"]["output_shapes"].is_array());
    }
  }
  EXPECT_EQ(size_t(counters), size_t(runs) * executed);
  for (int r = 0; r < runs; ++r) {
    ASSERT_EQ(nodes[size_t(r)].size(), executed) << "run " << r;
    double sum = 0, prev_end = run_span[size_t(r)].first;
    for (auto& [b, e] : nodes[size_t(r)]) {
      EXPECT_GE(b, prev_end) << "node events overlap";
      prev_end = e;
      sum += e - b;
    }
    EXPECT_LE(prev_end, run_span[size_t(r)].second) << "a node event ends after its run";
    EXPECT_LE(sum, run_span[size_t(r)].second - run_span[size_t(r)].first);
  }
  EXPECT_EQ(per_op["Conv"] + per_op["segmux::Linear"] + per_op["MatMul"], 2 * runs) << j.dump();
  EXPECT_EQ(per_op.count("Reshape"), 0u);

  // The tables: per-run figures, shares summing to 1, FLOP of the conv and the matmul.
  auto ops = prof.by_op_type();
  double share = 0, flops = 0;
  for (auto& r : ops) {
    share += r.share;
    flops += r.flops;
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(flops, 2.0 * 16 * 256 * 8 * 9 + 2.0 * 16 * 256 * 64);
  EXPECT_EQ(prof.by_node(2).size(), 2u);
  EXPECT_NE(prof.summary_text(5).find("GFLOP/s"), std::string::npos);
}

TEST(Profiler, FlopEstimates) {
  auto flops = [](const std::string& domain, const std::string& op, std::vector<Shape> ins, Shape out,
                  std::map<std::string, ir::AttrValue> attrs = {}) {
    ir::Node n;
    n.op_type = op;
    n.domain = domain;
    n.attrs = std::move(attrs);
    std::vector<Tensor> t;
    for (auto& s : ins) t.emplace_back(DType::f32, s);
    std::vector<const Tensor*> in;
    for (auto& x : t) in.push_back(&x);
    Tensor y(DType::f32, out);
    std::vector<Tensor*> outs{&y};
    return estimate_flops(n, in, outs);
  };
  EXPECT_DOUBLE_EQ(flops("", "MatMul", {{2, 3, 4}, {4, 5}}, {2, 3, 5}), 2.0 * 2 * 3 * 5 * 4);
  EXPECT_DOUBLE_EQ(flops("", "Gemm", {{4, 3}, {4, 5}}, {3, 5}, {{"transA", int64_t(1)}}), 2.0 * 3 * 5 * 4);
  EXPECT_DOUBLE_EQ(flops("", "Conv", {{1, 4, 8, 8}, {6, 2, 3, 3}}, {1, 6, 8, 8}), 2.0 * 6 * 64 * 2 * 9);
  EXPECT_DOUBLE_EQ(flops("", "ConvTranspose", {{1, 4, 8, 8}, {4, 3, 2, 2}}, {1, 3, 16, 16}), 2.0 * 4 * 64 * 3 * 4);
  EXPECT_DOUBLE_EQ(flops("segmux", "Linear", {{7, 16}, {16, 32}}, {7, 32}), 2.0 * 7 * 32 * 16);
  EXPECT_DOUBLE_EQ(flops("segmux", "Attention", {{2, 3, 10, 8}, {2, 3, 12, 8}, {2, 3, 12, 4}}, {2, 3, 10, 4}),
                   2.0 * 6 * 10 * 12 * (8 + 4));
  EXPECT_EQ(flops("", "Relu", {{4, 4}}, {4, 4}), 0.0);
}
