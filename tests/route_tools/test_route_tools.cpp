// The route's tools for any ONNX: extract (the subgraph between named tensors) and slim (standard-ONNX
// passes, outputs verified), on small built graphs and on a SAM 3.1 candidate of the fixture model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/error_text.h"
#include "compiler/slim.h"
#include "deploy/model_store/engine_backend.h"
#include "engines/ort/ort_model.h"
#include "ir/builder.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"
#include "models/sam31/weights.h"
#include "onnx/extract.h"
#include "onnx/onnx_io.h"
#include "pipeline/backends/ort_backend.h"
#include "runtime/interpreter.h"
#include "verify/compare.h"
#include "verify/graph_equivalence.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

std::string temp_path(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("segmux_route_tools_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

Tensor seeded(const Shape& shape, uint64_t seed) {
  ir::Graph g;
  ir::GraphBuilder b(g);
  b.input("x", DType::f32, shape);
  return verify::seeded_inputs(g, seed).at("x");
}

// x -> y1 = x W -> y2 = Relu(y1) -> y3 = y2 W -> out = y3 + y1: W is used on both sides of a cut at y2.
ir::Graph shared_weight_graph() {
  ir::Graph g;
  g.name = "shared";
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 4});
  int w = b.constant(seeded({4, 4}, 7), "W");
  int y1 = b.op1("MatMul", {x, w});
  g.value(y1).name = "y1";
  int y2 = b.op1("Relu", {y1});
  g.value(y2).name = "y2";
  int y3 = b.op1("MatMul", {y2, w});
  g.value(y3).name = "y3";
  b.output(b.op1("Add", {y3, y1}), "out");
  return g;
}

// The graph with extra outputs (to read its intermediate values).
ir::Graph with_outputs(ir::Graph g, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    int id = g.find_value(n);
    EXPECT_GE(id, 0) << n;
    if (std::find(g.outputs.begin(), g.outputs.end(), id) == g.outputs.end()) g.outputs.push_back(id);
  }
  return g;
}

std::map<std::string, Tensor> run_reference(const ir::Graph& g, const std::map<std::string, Tensor>& in) {
  return Interpreter(g, InterpreterOptions{2, false}).run(in);
}

void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  verify::Comparison c = verify::compare_tensors(got, want);
  EXPECT_TRUE(c.contract_error.empty()) << what << ": " << c.contract_error;
  EXPECT_EQ(c.max_abs, 0.0) << what;  // same kernels on the same values: bit-identical
}

using segmux::test::error_of;

}  // namespace

TEST(Extract, CutCopiesInitializersSharedAcrossTheCut) {
  const std::string path = temp_path("shared.onnx");
  onnx_io::export_onnx_file(shared_weight_graph(), path);
  const ir::Graph g = onnx_io::import_onnx_file(path);
  ir::Graph sub = onnx_io::extract_subgraph(g, {"y2"}, {"y3"});
  ASSERT_EQ(sub.nodes.size(), 1u);
  EXPECT_EQ(sub.nodes[0].op_type, "MatMul");
  ASSERT_EQ(sub.initializers.size(), 1u);
  const ir::Value& in = sub.value(sub.inputs.at(0));
  EXPECT_EQ(in.name, "y2");
  EXPECT_TRUE(in.has_shape);
  EXPECT_EQ(in.shape, (Shape{2, 4}));  // from shape inference: y2 was no graph input
  const std::string sub_path = temp_path("shared_sub.onnx");
  onnx_io::export_onnx_file(sub, sub_path);  // standard ONNX, checker clean
  const ir::Graph reread = onnx_io::import_onnx_file(sub_path);

  auto in_full = verify::seeded_inputs(g, 11);
  auto full = run_reference(with_outputs(g, {"y1", "y2", "y3"}), in_full);
  auto got = run_reference(reread, {{"y2", full.at("y2")}});
  expect_equal(got.at("y3"), full.at("y3"), "y3");

  // Two inputs, the weight's other use outside; the whole graph from x.
  ir::Graph two = onnx_io::extract_subgraph(g, {"y1", "y2"}, {"out"});
  EXPECT_EQ(two.nodes.size(), 2u);
  EXPECT_EQ(run_reference(two, {{"y1", full.at("y1")}, {"y2", full.at("y2")}}).at("out").numel(), 8);
  ir::Graph whole = onnx_io::extract_subgraph(g, {"x"}, {"out"});
  EXPECT_EQ(whole.nodes.size(), g.nodes.size());
}

TEST(Extract, BadNamesAndMissingInputsAreClearErrors) {
  const ir::Graph g = shared_weight_graph();
  std::string e = error_of([&] { onnx_io::extract_subgraph(g, {"y2"}, {"y33"}); });
  EXPECT_NE(e.find("output 'y33' is not a tensor of the model"), std::string::npos) << e;
  EXPECT_NE(e.find("'y3'"), std::string::npos) << e;  // nearest names
  e = error_of([&] { onnx_io::extract_subgraph(g, {"qqqqqqqqqqqq"}, {"out"}); });
  EXPECT_NE(e.find("input 'qqqqqqqqqqqq' is not a tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("its tensors include 'x'"), std::string::npos) << e;  // no near match: what there is
  e = error_of([&] { onnx_io::extract_subgraph(g, {"y2"}, {"out"}); });
  EXPECT_NE(e.find("output 'out' needs 'x'"), std::string::npos) << e;  // y1 comes from x, not cut
  e = error_of([&] { onnx_io::extract_subgraph(g, {}, {}); });
  EXPECT_NE(e.find("no outputs"), std::string::npos) << e;
  e = error_of([&] { onnx_io::extract_subgraph(g, {"x"}, {"W"}); });
  EXPECT_NE(e.find("output 'W' is an initializer"), std::string::npos) << e;
  e = error_of([&] { onnx_io::extract_subgraph(g, {"y2", "y2"}, {"y3"}); });
  EXPECT_NE(e.find("given twice"), std::string::npos) << e;
}

// A middle piece of a real candidate: every value consumed by nodes [n/4, n/2) that comes from before
// is an input, the outputs of node n/2 - 1 are the outputs; the piece reproduces the full model's
// intermediate values.
TEST(Extract, MiddleOfASam31CandidateMatchesTheFullModel) {
  const sam31::ModelConfig cfg = segmux::verify::load_fixture_config(kFixture + "/config.json");
  sam31::Weights w = sam31::Weights::load(kFixture + "/weights.safetensors");
  const std::string path = temp_path("memory_encoder.onnx");
  onnx_io::export_onnx_file(sam31::find_candidate("memory_encoder")->build(cfg, w), path);
  const ir::Graph g = onnx_io::import_onnx_file(path);
  const size_t lo = g.nodes.size() / 4, hi = g.nodes.size() / 2;
  ASSERT_GT(hi, lo + 5);
  std::vector<std::string> inputs, outputs;
  std::set<int> seen;
  for (size_t i = lo; i < hi; ++i)
    for (int v : g.nodes[i].inputs) {
      if (v < 0 || g.is_initializer(v) || seen.count(v)) continue;
      const int p = g.value(v).producer;
      if (p >= 0 && size_t(p) >= lo) continue;
      seen.insert(v);
      inputs.push_back(g.value(v).name);
    }
  for (int v : g.nodes[hi - 1].outputs)
    if (v >= 0) outputs.push_back(g.value(v).name);
  ir::Graph sub = onnx_io::extract_subgraph(g, inputs, outputs);
  EXPECT_LE(sub.nodes.size(), hi - lo);
  EXPECT_GE(sub.nodes.size(), 1u);
  const std::string sub_path = temp_path("memory_encoder_middle.onnx");
  onnx_io::export_onnx_file(sub, sub_path);
  const ir::Graph reread = onnx_io::import_onnx_file(sub_path);

  std::vector<std::string> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  auto full = run_reference(with_outputs(g, all), verify::seeded_inputs(g, 3));
  std::map<std::string, Tensor> sub_in;
  for (const std::string& n : inputs) sub_in[n] = full.at(n);
  auto got = run_reference(reread, sub_in);
  for (const std::string& n : outputs) expect_equal(got.at(n), full.at(n), n);
  std::string why;
  if (ort_available(&why)) {  // the piece loads and runs in ONNX Runtime too
    auto ort = OrtModel(sub_path, OrtModelOptions{2, false}).run(sub_in);
    for (const std::string& n : outputs)
      EXPECT_NE(verify::compare_tensors(ort.at(n), full.at(n)).verdict, verify::Verdict::fail) << n;
  }
}

// Shape arithmetic, constant subexpressions, Identity, duplicates and a dead branch: all go, the
// outputs stay (names, values), and the result is standard ONNX.
TEST(Slim, FoldsAndCleansAndKeepsStandardOnnx) {
  ir::Graph g;
  g.name = "fat";
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3, 4});
  int shape = b.op1("Shape", {x});
  int flat = b.op1("Concat", {b.op1("Gather", {shape, b.ints({0})}, {{"axis", int64_t(0)}}), b.ints({-1})},
                   {{"axis", int64_t(0)}});
  int r = b.op1("Reshape", {x, flat});  // [2, 12] from shape arithmetic
  int c = b.op1("Add", {b.constant(seeded({12}, 1), "a"), b.constant(seeded({12}, 2), "b")});  // constant
  int id = b.op1("Identity", {r});
  int s1 = b.op1("Mul", {id, c});
  int s2 = b.op1("Mul", {id, c});  // duplicate of s1
  b.op1("Relu", {s1});             // dead
  int y = b.op1("Add", {s1, s2});
  g.value(y).shape = {2, 12};  // the builder cannot infer through a computed Reshape shape
  g.value(y).has_shape = true;
  b.output(y, "y");
  const std::string path = temp_path("fat.onnx"), out = temp_path("fat_slim.onnx");
  onnx_io::export_onnx_file(g, path);
  const ir::Graph before = onnx_io::import_onnx_file(path);
  ir::Graph after = before;
  compiler::SlimReport rep = compiler::slim_graph(after);
  EXPECT_EQ(rep.passes.nodes_before, before.nodes.size());
  std::multiset<std::string> ops;
  for (const ir::Node& n : after.nodes) ops.insert(n.op_type);
  EXPECT_EQ(ops, (std::multiset<std::string>{"Reshape", "Mul", "Add"})) << rep.to_text();
  EXPECT_EQ(rep.ops_before.at("Shape"), 1u);
  EXPECT_EQ(rep.ops_after.count("Shape"), 0u);
  EXPECT_NE(rep.to_text().find("nodes 10 -> 3"), std::string::npos) << rep.to_text();
  onnx_io::export_onnx_file(after, out);  // runs the ONNX checker
  const ir::Graph written = onnx_io::import_onnx_file(out);
  EXPECT_EQ(written.value(written.outputs.at(0)).name, "y");
  verify::EquivalenceReport e = verify::check_equivalent(before, written, path, out);
  EXPECT_EQ(e.verdict(), verify::Verdict::pass) << e.to_text();
  EXPECT_EQ(e.checks.at(0).outputs.at(0).second.max_abs, 0.0);
}

TEST(Slim, Sam31CandidateStaysEquivalent) {
  const sam31::ModelConfig cfg = segmux::verify::load_fixture_config(kFixture + "/config.json");
  sam31::Weights w = sam31::Weights::load(kFixture + "/weights.safetensors");
  const std::string path = temp_path("detector.onnx"), out = temp_path("detector_slim.onnx");
  onnx_io::export_onnx_file(sam31::find_candidate("detector")->build(cfg, w), path);
  const ir::Graph before = onnx_io::import_onnx_file(path);
  ir::Graph after = before;
  compiler::SlimReport rep = compiler::slim_graph(after);
  EXPECT_LT(rep.passes.nodes_after, rep.passes.nodes_before) << rep.to_text();
  for (const ir::Node& n : after.nodes) EXPECT_EQ(n.domain, "") << n.describe();
  onnx_io::export_onnx_file(after, out);
  verify::EquivalenceReport e = verify::check_equivalent(before, onnx_io::import_onnx_file(out), path, out);
  std::cout << rep.to_text() << e.to_text();
  EXPECT_EQ(e.verdict(), verify::Verdict::pass) << e.to_text();
}

TEST(Slim, AWrongRewriteFails) {
  // The check can fail: a model that computes something else is not passed.
  ir::Graph a = shared_weight_graph(), b2 = shared_weight_graph();
  b2.nodes.back().op_type = "Sub";
  verify::EquivalenceReport e = verify::check_equivalent(a, b2, "", "");
  EXPECT_EQ(e.verdict(), verify::Verdict::fail) << e.to_text();
  EXPECT_NE(e.checks.at(1).skipped, "");  // no files: ONNX Runtime not run
}

TEST(Engines, NamesAndAvailabilityAreSpelledOut) {
  std::string why;
  EXPECT_TRUE(pipeline::engine_available("smx", &why));
  EXPECT_FALSE(pipeline::engine_available("tensorrt", &why));
  EXPECT_EQ(why, "engine \"tensorrt\" is not available: unknown engine (known: smx, ort)");
  EXPECT_NE(error_of([] { pipeline::require_engine("tensorrt"); }).find("unknown engine 'tensorrt'"),
            std::string::npos);
  std::string ort_why;
  if (!ort_available(&ort_why)) {  // a build or machine without ONNX Runtime says why, in the engine's words
    EXPECT_FALSE(pipeline::engine_available("ort", &why));
    EXPECT_EQ(why, "engine \"ort\" is not available: " + ort_why);
  } else {
    EXPECT_TRUE(pipeline::engine_available("ort", &why));
  }
  EXPECT_EQ(pipeline::onnx_candidate_path("PKG", "backbone"), "PKG/onnx/backbone.onnx");
}
