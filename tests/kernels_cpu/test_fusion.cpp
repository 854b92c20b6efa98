// Fusion passes: the fused graph computes what the unfused one does (reference kernels on the
// unfused graph vs optimized and reference kernels on the fused graph), and the pattern count is
// what the graph holds. Patterns are built with the SAM 3.1 layer helpers (what the model emits).
// Tolerance: 2e-5 absolute + 2e-5 relative (reordered f32 sums; GELU via erfc vs ONNX Erf).
#include <map>

#include "compiler/graph_stats.h"
#include "compiler/passes.h"
#include "compiler/passes/fuse_all.h"
#include "harness.h"
#include "models/sam31/layers.h"
#include "runtime/interpreter.h"

namespace segmux::testing_cpu {
namespace {

namespace L = sam31::layers;
using ir::GraphBuilder;

int count_ops(const ir::Graph& g, const std::string& domain, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.domain == domain && node.op_type == op;
  return n;
}

std::map<std::string, Tensor> run_graph(const ir::Graph& g, const std::map<std::string, Tensor>& in, bool optimized) {
  InterpreterOptions o;
  o.num_threads = 2;
  o.use_optimized_kernels = optimized;
  Interpreter s(g, o);
  return s.run(in);
}

// Unfused (reference) vs fused (optimized, and reference) on the same inputs, within `tol` absolute +
// `tol` relative (0: bit for bit).
void expect_same_outputs(const ir::Graph& unfused, const ir::Graph& fused, const std::map<std::string, Tensor>& in,
                         double tol = 2e-5) {
  auto want = run_graph(unfused, in, false);
  auto got_opt = run_graph(fused, in, true);
  auto got_ref = run_graph(fused, in, false);
  ASSERT_EQ(want.size(), got_opt.size());
  const char* exact = tol == 0 ? ", bit-exact expected" : "";
  for (auto& [name, t] : want) {
    EXPECT_TRUE(close(got_opt.at(name), t, tol, tol)) << name << " (optimized kernels" << exact << ")";
    EXPECT_TRUE(close(got_ref.at(name), t, tol, tol)) << name << " (reference kernels" << exact << ")";
  }
}

TEST(FuseGelu, AllOperandOrders) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {3, 37});
  // 1: layers' form Mul(Mul(x, 1+erf), 0.5)
  int y1 = L::gelu_erf(b, x);
  // 2: Mul(Mul(x, 0.5), 1 + erf(x * 1/sqrt2))
  int e2 = b.op1("Erf", {L::mul(b, x, L::scalar(b, 0.70710678f))});
  int y2 = L::mul(b, L::mul(b, x, L::scalar(b, 0.5f)), L::add(b, L::scalar(b, 1.f), e2));
  // 3: Mul(Mul(1+erf, 0.5), x)
  int e3 = b.op1("Erf", {L::div(b, x, L::scalar(b, 1.41421356f))});
  int y3 = L::mul(b, L::mul(b, L::add_scalar(b, e3, 1.f), L::scalar(b, 0.5f)), x);
  b.output(y1, "y1");
  b.output(y2, "y2");
  b.output(y3, "y3");
  ir::Graph fused = g;
  EXPECT_TRUE(compiler::fuse_gelu(fused));
  EXPECT_EQ(count_ops(fused, "segmux", "Gelu"), 3);
  EXPECT_EQ(count_ops(fused, "", "Erf"), 0);
  EXPECT_EQ(count_ops(fused, "", "Mul"), 0);
  EXPECT_FALSE(compiler::fuse_gelu(fused));
  expect_same_outputs(g, fused, {{"x", random_tensor({3, 37}, 1, -5.f, 5.f)}});
}

TEST(FuseGelu, InnerValueUsedElsewhereIsNotFused) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 5});
  int e = b.op1("Erf", {L::div(b, x, L::scalar(b, 1.41421356f))});
  int y = L::mul_scalar(b, L::mul(b, x, L::add_scalar(b, e, 1.f)), 0.5f);
  b.output(y, "y");
  b.output(e, "erf");  // the Erf output is needed on its own
  ir::Graph fused = g;
  EXPECT_FALSE(compiler::fuse_gelu(fused));
  EXPECT_EQ(count_ops(fused, "segmux", "Gelu"), 0);
}

// LayerNorm2d as sam_heads.cpp layer_norm_2d emits it (channel mean, centred square mean, eps, Sqrt, Div,
// per-channel affine with [1, C, 1, 1] constants).
int layer_norm_2d_pattern(GraphBuilder& b, int x, int64_t C, uint64_t seed) {
  const ir::Attrs axis1 = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}};
  int u = b.op1("ReduceMean", {x}, axis1);
  int xc = L::sub(b, x, u);
  int var = b.op1("ReduceMean", {L::mul(b, xc, xc)}, axis1);
  int y = L::div(b, xc, b.op1("Sqrt", {L::add(b, var, b.scalar_f32(1e-6f))}));
  int w = b.constant(random_tensor({1, C, 1, 1}, seed, 0.5f, 1.5f), "weight");
  return L::add(b, L::mul(b, w, y), b.constant(random_tensor({1, C, 1, 1}, seed + 1), "bias"));
}

TEST(FuseLayerNorm2d, ChannelNormBecomesLayerNormalizationAndTransposesCancel) {
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t C = 24;
  int x = b.input("x", DType::f32, {2, C, 5, 7});
  int y1 = L::gelu_erf(b, layer_norm_2d_pattern(b, x, C, 1));  // the mask downsampler's form
  // The ConvNeXt block's form: the norm, then to channels-last (the pair of transposes cancels).
  int t = L::transpose(b, layer_norm_2d_pattern(b, y1, C, 3), {0, 2, 3, 1});
  int y2 = L::add(b, t, t);
  b.output(y1, "y1");
  b.output(y2, "y2");
  ir::Graph fused = g;
  for (auto& p : compiler::fusion_passes()) p.run(fused);
  EXPECT_EQ(count_ops(fused, "", "LayerNormalization"), 2);
  EXPECT_EQ(count_ops(fused, "", "ReduceMean"), 0);
  EXPECT_EQ(count_ops(fused, "", "Sqrt"), 0);
  // to channels-last and back around the first norm, to channels-last only before the second
  EXPECT_EQ(count_ops(fused, "", "Transpose"), 3);
  expect_same_outputs(g, fused, {{"x", random_tensor({2, C, 5, 7}, 5, -3.f, 3.f)}});
}

TEST(FuseLayerNorm2d, NotAChannelNormIsLeftAlone) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 6, 4, 4});
  const ir::Attrs axis2 = {{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t(1)}};
  int u = b.op1("ReduceMean", {x}, axis2);  // over H, not channels
  int xc = L::sub(b, x, u);
  int var = b.op1("ReduceMean", {L::mul(b, xc, xc)}, axis2);
  b.output(L::div(b, xc, b.op1("Sqrt", {L::add(b, var, b.scalar_f32(1e-6f))})), "y");
  int y2 = layer_norm_2d_pattern(b, x, 6, 7);
  b.output(y2, "y2");
  b.output(b.op1("ReduceMean", {y2}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(1)}}), "m");
  ir::Graph fused = g;
  EXPECT_TRUE(compiler::fuse_layer_norm_2d(fused));
  EXPECT_EQ(count_ops(fused, "", "LayerNormalization"), 1);
  EXPECT_EQ(count_ops(fused, "", "ReduceMean"), 3);
  expect_same_outputs(g, fused, {{"x", random_tensor({2, 6, 4, 4}, 8)}});
}

TEST(ConvChannelsLast, ConvNormGeluChainKeepsOneLayout) {
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t C = 16;
  int x = b.input("x", DType::f32, {1, 8, 12, 12});
  auto conv = [&](int in, int64_t ic, int64_t oc, int64_t k, uint64_t seed, const ir::Attrs& extra) {
    ir::Attrs a = extra;
    a["pads"] = std::vector<int64_t>(4, k / 2);
    return b.op1("Conv",
                 {in, b.constant(random_tensor({oc, ic, k, k}, seed, -0.3f, 0.3f), "w"),
                  b.constant(random_tensor({oc}, seed + 1), "b")},
                 a);
  };
  // mask downsampler: conv -> LayerNorm2d -> GELU -> conv (stride 2)
  int h = conv(x, 8, C, 3, 1, {{"strides", std::vector<int64_t>{2, 2}}});
  h = L::gelu_erf(b, layer_norm_2d_pattern(b, h, C, 3));
  h = conv(h, C, C, 3, 5, {{"strides", std::vector<int64_t>{2, 2}}});
  // ConvNeXt block: depthwise conv -> LayerNorm2d -> channels-last -> (pointwise) -> back -> residual
  int d = conv(h, 1, C, 7, 7, {{"group", C}});
  int t = L::transpose(b, layer_norm_2d_pattern(b, d, C, 9), {0, 2, 3, 1});
  int y = L::add(b, h, L::transpose(b, L::add(b, t, t), {0, 3, 1, 2}));
  b.output(y, "y");
  ir::Graph fused = g;
  for (auto& p : compiler::fusion_passes()) p.run(fused);
  EXPECT_EQ(count_ops(fused, "segmux", "Conv"), 3);
  EXPECT_EQ(count_ops(fused, "", "Conv"), 0);
  // left: only the transpose back to channels-first before the residual add
  EXPECT_EQ(count_ops(fused, "", "Transpose"), 1);
  expect_same_outputs(g, fused, {{"x", random_tensor({1, 8, 12, 12}, 11, -2.f, 2.f)}});
}

// The FPN neck's 1x1 -> 3x3 pair: the value between them becomes channels-last; a conv whose output is
// also read by another node keeps writing channels-first.
TEST(ConvChannelsLast, ConvIntoConvKeepsChannelsLastBetween) {
  for (const bool shared : {false, true}) {
    ir::Graph g;
    GraphBuilder b(g);
    int x = b.input("x", DType::f32, {1, 8, 10, 10});
    int c1 = b.op1("Conv", {x, b.constant(random_tensor({16, 8, 1, 1}, 1, -0.3f, 0.3f), "w1"),
                            b.constant(random_tensor({16}, 2), "b1")});
    int c2 = b.op1("Conv", {c1, b.constant(random_tensor({16, 16, 3, 3}, 3, -0.2f, 0.2f), "w2")},
                   {{"pads", std::vector<int64_t>(4, 1)}});
    b.output(shared ? L::add(b, c2, c1) : c2, "y");
    ir::Graph fused = g;
    EXPECT_EQ(compiler::conv_channels_last(fused), !shared);
    if (!shared) {
      ASSERT_EQ(count_ops(fused, "segmux", "Conv"), 2);
      EXPECT_EQ(fused.nodes[0].attr_int("channels_last_out", 0), 1);
      EXPECT_EQ(fused.nodes[1].attr_int("channels_last_in", 0), 1);
      EXPECT_EQ(fused.value(fused.nodes[0].outputs[0]).shape, (Shape{1, 10, 10, 16}));
    }
    expect_same_outputs(g, fused, {{"x", random_tensor({1, 8, 10, 10}, 11, -2.f, 2.f)}});
  }
}

TEST(ConvChannelsLast, SharedOrGraphOutputValuesStay) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {1, 4, 6, 6});
  int c = b.op1("Conv", {x, b.constant(random_tensor({4, 4, 1, 1}, 1), "w")});
  b.output(c, "conv");  // the NCHW result is an output too: the conv keeps writing NCHW
  b.output(L::transpose(b, c, {0, 2, 3, 1}), "t");
  ir::Graph fused = g;
  EXPECT_FALSE(compiler::conv_channels_last(fused));
  EXPECT_EQ(count_ops(fused, "", "Conv"), 1);
}

TEST(MergeTransposes, ComposesAndCancels) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3, 4, 5});
  int t = L::transpose(b, L::transpose(b, x, {0, 2, 3, 1}), {0, 3, 1, 2});  // identity
  b.output(L::add(b, t, t), "sum");
  b.output(L::transpose(b, L::transpose(b, x, {1, 0, 2, 3}), {0, 1, 3, 2}), "composed");
  int shared = L::transpose(b, x, {3, 2, 1, 0});  // used twice: stays
  b.output(L::transpose(b, shared, {3, 2, 1, 0}), "back");
  b.output(shared, "shared");
  ir::Graph merged = g;
  EXPECT_TRUE(compiler::merge_transposes(merged));
  EXPECT_EQ(count_ops(merged, "", "Transpose"), 3);
  expect_same_outputs(g, merged, {{"x", random_tensor({2, 3, 4, 5}, 9)}});
}

TEST(FuseLinear, BiasGeluAndResidual) {
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t D = 24, H = 40;
  int x = b.input("x", DType::f32, {2, 9, D});
  Tensor w1 = random_tensor({H, D}, 2), b1 = random_tensor({H}, 3), w2 = random_tensor({D, H}, 4),
         b2 = random_tensor({D}, 5);
  int h = L::linear_t(b, x, w1, b1, "fc1");
  h = L::gelu_erf(b, h);
  h = L::linear_t(b, h, w2, b2, "fc2");
  int y = L::add(b, x, h);                                                      // residual
  int z = L::linear_t(b, y, w2.reshaped({H, D}).clone(), Tensor(), "no_bias");  // MatMul alone
  b.output(y, "y");
  b.output(z, "z");
  ir::Graph fused = g;
  for (auto& p : compiler::fusion_passes()) p.run(fused);
  EXPECT_EQ(count_ops(fused, "segmux", "Linear"), 3);
  EXPECT_EQ(count_ops(fused, "", "MatMul"), 0);
  EXPECT_EQ(count_ops(fused, "", "Add"), 0);
  EXPECT_EQ(count_ops(fused, "segmux", "Gelu"), 0);
  int with_gelu = 0, with_residual = 0;
  for (auto& n : fused.nodes) {
    if (n.op_type != "Linear") continue;
    with_gelu += n.attr_string("activation", "") == "gelu";
    with_residual += n.inputs.size() == 4;
  }
  EXPECT_EQ(with_gelu, 1);
  EXPECT_EQ(with_residual, 1);
  expect_same_outputs(g, fused, {{"x", random_tensor({2, 9, D}, 6)}});
}

// The MLPs of the detector (the fusion encoder's FFN, the box bias MLPs): Linear -> Relu -> Linear. The
// Relu becomes the first Linear's activation unless its input is read elsewhere too.
TEST(FuseLinear, ReluBecomesTheActivationOfItsSoleProducer) {
  ir::Graph g;
  GraphBuilder b(g);
  const int64_t D = 24, H = 40;
  int x = b.input("x", DType::f32, {2, 9, D});
  Tensor w1 = random_tensor({H, D}, 12), b1 = random_tensor({H}, 13), w2 = random_tensor({D, H}, 14),
         b2 = random_tensor({D}, 15);
  int h = L::relu(b, L::linear_t(b, x, w1, b1, "fc1"));
  int y = L::add(b, x, L::linear_t(b, h, w2, b2, "fc2"));  // residual
  int shared = L::linear_t(b, x, w1, b1, "shared");        // read by the Relu and an output
  b.output(y, "y");
  b.output(L::relu(b, shared), "relu_of_shared");
  b.output(shared, "shared");
  ir::Graph fused = g;
  for (auto& p : compiler::fusion_passes()) p.run(fused);
  EXPECT_EQ(count_ops(fused, "", "Relu"), 1);
  int with_relu = 0;
  for (auto& n : fused.nodes) with_relu += n.op_type == "Linear" && n.attr_string("activation", "") == "relu";
  EXPECT_EQ(with_relu, 1);
  expect_same_outputs(g, fused, {{"x", random_tensor({2, 9, D}, 16)}});
}

TEST(FuseAttention, ScaledMaskedSdpa) {
  ir::Graph g;
  GraphBuilder b(g);
  const Shape qs = {2, 3, 17, 16}, ks = {2, 3, 29, 16};
  int q = b.input("q", DType::f32, qs);
  int k = b.input("k", DType::f32, ks);
  int v = b.input("v", DType::f32, {2, 3, 29, 8});
  int mask = b.input("mask", DType::f32, {2, 1, 1, 29});
  b.output(L::sdpa(b, q, k, v, mask), "masked");
  b.output(L::sdpa(b, q, k, v), "plain");
  ir::Graph fused = g;
  EXPECT_TRUE(compiler::fuse_attention(fused));
  EXPECT_EQ(count_ops(fused, "segmux", "Attention"), 2);
  EXPECT_EQ(count_ops(fused, "", "Softmax"), 0);
  EXPECT_EQ(count_ops(fused, "", "MatMul"), 0);
  Tensor m(DType::f32, {2, 1, 1, 29});
  for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = i % 4 == 3 ? -INFINITY : 0.f;
  expect_same_outputs(
      g, fused,
      {{"q", random_tensor(qs, 7)}, {"k", random_tensor(ks, 8)}, {"v", random_tensor({2, 3, 29, 8}, 9)}, {"mask", m}});
}

TEST(FuseAttention, SoftmaxNeededElsewhereIsNotFused) {
  ir::Graph g;
  GraphBuilder b(g);
  int q = b.input("q", DType::f32, {1, 5, 8});
  int k = b.input("k", DType::f32, {1, 5, 8});
  int s = b.op1("MatMul", {q, L::transpose(b, k, {0, 2, 1})});
  int p = b.op1("Softmax", {s}, {{"axis", int64_t(-1)}});
  b.output(b.op1("MatMul", {p, k}), "y");
  b.output(p, "probs");
  ir::Graph fused = g;
  EXPECT_FALSE(compiler::fuse_attention(fused));
}

TEST(FuseGroupNorm, TorchExportPattern) {
  ir::Graph g;
  GraphBuilder b(g);
  const Shape xs = {2, 12, 7, 5};
  int x = b.input("x", DType::f32, xs);
  sam31::Weights w;
  w.set("gn.weight", random_tensor({12}, 10, 0.5f, 1.5f));
  w.set("gn.bias", random_tensor({12}, 11));
  b.output(L::group_norm(b, w, x, "gn", 4, 1e-5f), "y");
  ir::Graph fused = g;
  EXPECT_TRUE(compiler::fuse_group_norm(fused));
  EXPECT_EQ(count_ops(fused, "segmux", "GroupNorm"), 1);
  EXPECT_EQ(count_ops(fused, "", "InstanceNormalization"), 0);
  EXPECT_EQ(count_ops(fused, "", "Reshape"), 0);
  EXPECT_EQ(fused.nodes.size(), 1u);
  expect_same_outputs(g, fused, {{"x", random_tensor(xs, 12, -2.f, 3.f)}});
}

TEST(FuseRope, AxialRopeOnQueriesAndKeys) {
  ir::Graph g;
  GraphBuilder b(g);
  const Shape xs = {2, 3, 24, 16};  // [B, heads, L = 4 x 6 grid, head_dim]
  int q = b.input("q", DType::f32, xs);
  int k = b.input("k", DType::f32, xs);
  const L::RopeTables rope = L::axial_rope_tables(16, 4, 6, 10000.0f, 1.0f);
  b.output(L::apply_rope(b, q, rope, "rope_q"), "q_rot");
  b.output(L::apply_rope(b, k, rope, "rope_k"), "k_rot");
  ir::Graph fused = g;
  EXPECT_TRUE(compiler::fuse_rope(fused));
  EXPECT_EQ(count_ops(fused, "segmux", "Rope"), 2);
  EXPECT_EQ(fused.nodes.size(), 2u);
  std::map<std::string, Tensor> in = {{"q", random_tensor(xs, 13)}, {"k", random_tensor(xs, 14)}};
  auto want = run_graph(g, in, false);
  auto got = run_graph(fused, in, true);
  for (auto& [name, t] : want) EXPECT_TRUE(close(got.at(name), t, 0, 0)) << name << " (bit-exact expected)";
}

// The ViT's attention as backbone.cpp's vit_attention emits it (qkv Linear -> Reshape -> Transpose ->
// Split -> Squeeze -> RoPE on q and k -> SDPA -> Transpose -> Reshape -> proj Linear), windowed (windows
// in the batch dim) and global: after the fusion passes, attention-views leaves no Transpose or Split
// (Rope and Attention read the qkv tensor through views, the attention writes the head merge), and the
// result is the fused graph's bit for bit, with the optimized kernels and with the reference ones.
// An attention over more queries than that (a global block at full size) keeps its Transposes: its k and
// v rows would be read once per query tile through the view.
TEST(AttentionViews, ViTQkvSplitAndHeadMergeMoveNoBytes) {
  for (const int64_t windows : {int64_t(1), int64_t(3), int64_t(0)}) {
    ir::Graph g;
    GraphBuilder b(g);
    const bool global = windows == 0;                                          // 1040 queries: a 26 x 40 token grid
    const int64_t N = global ? 1040 : 24, heads = 2, hd = 16, C = heads * hd;  // N: a 4 x 6 token grid
    int x = b.input("x", DType::f32, {std::max<int64_t>(windows, 1), N, C});
    int qkv = L::linear_t(b, x, random_tensor({3 * C, C}, 1, -0.3f, 0.3f), random_tensor({3 * C}, 2), "qkv");
    qkv = L::transpose(b, L::reshape(b, qkv, {std::max<int64_t>(windows, 1), N, 3, heads, hd}), {2, 0, 3, 1, 4});
    const std::vector<int> parts = L::split(b, qkv, 0, {1, 1, 1});
    const L::RopeTables rope = L::axial_rope_tables(int(hd), global ? 26 : 4, global ? 40 : 6, 10000.0f, 1.0f);
    const int q = L::apply_rope(b, L::squeeze(b, parts[0], {0}), rope, "rope_q");
    const int k = L::apply_rope(b, L::squeeze(b, parts[1], {0}), rope, "rope_k");
    int o = L::sdpa(b, q, k, L::squeeze(b, parts[2], {0}));
    o = L::reshape(b, L::transpose(b, o, {0, 2, 1, 3}), {std::max<int64_t>(windows, 1), N, C});
    b.output(L::linear_t(b, o, random_tensor({C, C}, 3, -0.3f, 0.3f), random_tensor({C}, 4), "proj"), "y");
    ir::Graph fused = g;
    for (auto& p : compiler::fusion_passes()) p.run(fused);
    ASSERT_EQ(count_ops(fused, "segmux", "Attention"), 1);
    EXPECT_GT(count_ops(fused, "", "Transpose"), 0);
    ir::Graph viewed = fused;
    if (global) {
      EXPECT_FALSE(compiler::read_through_views(viewed));
      continue;
    }
    EXPECT_TRUE(compiler::read_through_views(viewed));
    EXPECT_FALSE(compiler::read_through_views(viewed));  // a fixed point
    EXPECT_EQ(count_ops(viewed, "", "Transpose"), 0);
    EXPECT_EQ(count_ops(viewed, "", "Split"), 0);
    EXPECT_EQ(count_ops(viewed, "segmux", "Rope"), 2);
    // The FLOP estimate counts what the attention reads (its views' shapes), not the qkv tensor.
    EXPECT_EQ(compiler::graph_stats(viewed).flops, compiler::graph_stats(fused).flops);
    const std::map<std::string, Tensor> in = {{"x", random_tensor({windows, N, C}, 11, -2.f, 2.f)}};
    for (const bool optimized : {true, false}) {
      auto want = run_graph(fused, in, optimized), got = run_graph(viewed, in, optimized);
      EXPECT_TRUE(close(got.at("y"), want.at("y"), 0, 0)) << (optimized ? "optimized" : "reference") << " kernels";
    }
    expect_same_outputs(g, viewed, in);
  }
}

// The memory encoder's mask input (sigmoid, scale, bias, per-slot validity), then every other step kind
// with operands of each broadcast form, on sizes that leave partial vectors, blocks and pieces.
TEST(FusePointwise, ChainsOfEveryStepKindAndBroadcastForm) {
  for (const Shape& xs : {Shape{1, 3, 5, 7}, Shape{2, 5, 131, 257}}) {
    ir::Graph g;
    GraphBuilder b(g);
    const int64_t C = xs[1];
    int x = b.input("x", DType::f32, xs);
    int valid = b.input("valid", DType::f32, {1, C, 1, 1});
    int row = b.constant(random_tensor({xs[3]}, 21, 0.5f, 2.f), "row");
    int full = b.input("full", DType::f32, xs);
    int m = L::mul(b, L::add_scalar(b, L::mul_scalar(b, L::sigmoid(b, x), 2.f), -1.f), valid);
    b.output(m, "mask");
    int y = L::relu(b, L::sub(b, L::scalar(b, 0.25f), x));              // operand first (Sub.r), then Relu
    y = L::div(b, L::div(b, y, row), L::add(b, full, full));            // a row operand, then a full one
    y = L::div(b, L::scalar(b, 3.f), L::add(b, y, L::scalar(b, 1.f)));  // Div.r
    b.output(y, "y");
    ir::Graph fused = g;
    EXPECT_TRUE(compiler::fuse_pointwise(fused));
    EXPECT_EQ(count_ops(fused, "segmux", "Pointwise"), 2);
    EXPECT_EQ(count_ops(fused, "", "Sigmoid") + count_ops(fused, "", "Relu") + count_ops(fused, "", "Div"), 0);
    EXPECT_EQ(count_ops(fused, "", "Add"), 1);  // full + full: both operands have the value's shape
    EXPECT_FALSE(compiler::fuse_pointwise(fused));
    // Bit for bit: every step of a Pointwise rounds to f32 as the op it replaced.
    expect_same_outputs(g, fused,
                        {{"x", random_tensor(xs, 22, -6.f, 6.f)},
                         {"valid", random_tensor({1, C, 1, 1}, 23, 0.f, 1.f)},
                         {"full", random_tensor(xs, 24, 0.5f, 2.f)}},
                        0);
  }
}

TEST(FusePointwise, StopsAtSharedValuesGraphOutputsAndGrowingShapes) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 1});
  int wide = b.input("wide", DType::f32, {4, 6});
  int s = L::sigmoid(b, x);
  int shared = L::mul_scalar(b, s, 2.f);  // used twice: the chain Sigmoid -> Mul ends here
  b.output(L::add(b, shared, shared), "twice");
  int grown = L::relu(b, L::add(b, x, wide));  // Add grows [4,1] to [4,6]: the chain starts at the Add
  b.output(grown, "grown");
  int out_mid = L::relu(b, x);
  b.output(out_mid, "mid");  // a graph output ends a chain
  b.output(L::mul_scalar(b, out_mid, 3.f), "after_mid");
  ir::Graph fused = g;
  EXPECT_TRUE(compiler::fuse_pointwise(fused));
  EXPECT_EQ(count_ops(fused, "segmux", "Pointwise"), 2);  // Sigmoid -> Mul, and Add -> Relu
  EXPECT_EQ(count_ops(fused, "", "Relu"), 1);             // the graph output's
  expect_same_outputs(g, fused, {{"x", random_tensor({4, 1}, 31, -3.f, 3.f)}, {"wide", random_tensor({4, 6}, 32)}}, 0);
}

TEST(FusePointwise, MalformedStepsAreRefusedByName) {
  ir::Graph g;
  GraphBuilder b(g);
  int x = b.input("x", DType::f32, {2, 3});
  for (const char* steps : {"", "Tanh", "Relu.r", "Add"}) {  // "Add" without its operand
    EXPECT_THROW(b.op1("Pointwise", {x}, {{"steps", std::string(steps)}}, "segmux"), Error) << steps;
  }
}

}  // namespace
}  // namespace segmux::testing_cpu
