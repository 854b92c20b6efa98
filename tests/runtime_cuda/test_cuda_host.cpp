// The CUDA backend's host side, without a GPU: which nodes have a kernel and why not, launch shapes,
// device memory layout, and the errors at load ("no CUDA kernel" naming the node, "no CUDA device").
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/memory_planner.h"
#include "ir/builder.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/cuda_provider.h"
#include "kernels/cuda/launch_shape.h"
#include "runtime/cuda/cuda_executor.h"

namespace segmux {
namespace {

struct Built {
  ir::Graph g;
  MemoryPlan plan;
};

// x [2, 8, 16] -> LayerNorm -> Linear(W [16, 32], b) -> Relu -> (optionally) Tile, which has no CUDA kernel.
Built small_graph(bool with_tile) {
  Built b;
  ir::GraphBuilder gb(b.g);
  const int x = gb.input("x", DType::f32, {2, 8, 16});
  const int scale = gb.constant(Tensor::from_vector<float>({16}, std::vector<float>(16, 1.f)), "ln.scale");
  const int bias = gb.constant(Tensor::from_vector<float>({16}, std::vector<float>(16, 0.f)), "ln.bias");
  int y = gb.op1("LayerNormalization", {x, scale, bias}, {{"axis", ir::AttrValue(int64_t(-1))}});
  const int w = gb.constant(Tensor(DType::f32, {16, 32}), "proj.weight");
  const int wb = gb.constant(Tensor(DType::f32, {32}), "proj.bias");
  y = gb.op1("Linear", {y, w, wb}, {}, "segmux");
  y = gb.op1("Relu", {y});
  if (with_tile) y = gb.op1("Tile", {y, gb.ints({1, 1, 2})});
  gb.output(y, "out");
  b.plan = compiler::plan_memory(b.g);
  return b;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CudaSupport, CoversTheCandidatesMainOps) {
  const auto ops = cuda::cuda_supported_ops();
  for (const char* op : {"segmux.Linear",
                         "segmux.Attention",
                         "segmux.Pointwise",
                         "segmux.Gelu",
                         "segmux.GroupNorm",
                         "MatMul",
                         "LayerNormalization",
                         "Softmax",
                         "Transpose",
                         "Concat",
                         "Split",
                         "Slice",
                         "Gather",
                         "Expand",
                         "Cast",
                         "Where",
                         "ReduceMean",
                         "segmux.Rope",
                         "ArgMax",
                         "GatherElements",
                         "Conv",
                         "segmux.Conv",
                         "ConvTranspose",
                         "Resize"})
    EXPECT_TRUE(std::find(ops.begin(), ops.end(), op) != ops.end()) << op;
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

TEST(CudaSupport, NodeWithoutKernelIsNamedAtLoad) {
  Built b = small_graph(true);
  const auto lines = cuda_unsupported_nodes(b.g, b.plan);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("(Tile)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("no CUDA kernel for op Tile"), std::string::npos) << lines[0];
  // The executor refuses the model before it looks for a device: the same message on any machine.
  const std::string err = error_of([&] { CudaExecutor ex(b.g, b.plan); });
  EXPECT_NE(err.find("1 node(s) have no CUDA kernel (no CPU fallback)"), std::string::npos) << err;
  EXPECT_NE(err.find("Tile"), std::string::npos) << err;
}

TEST(CudaSupport, FullySupportedGraphHasNoComplaints) {
  Built b = small_graph(false);
  EXPECT_TRUE(cuda_unsupported_nodes(b.g, b.plan).empty());
}

TEST(CudaSupport, ReasonsNameDtypeAndAttributes) {
  ir::Graph g;
  ir::GraphBuilder gb(g);
  const int a = gb.input("a", DType::i64, {4});
  const int sum = gb.op1("Div", {a, a});  // integer Add/Sub/Mul/Max/Min run; integer Div does not
  const int x = gb.input("x", DType::f32, {2, 3});
  const int sm = gb.op1("Softmax", {x}, {{"axis", ir::AttrValue(int64_t(0))}});
  gb.output(sum, "sum");
  gb.output(sm, "sm");
  const auto lines = cuda_unsupported_nodes(g, compiler::plan_memory(g));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("takes f32 inputs, this node has (i64, i64)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("last axis only"), std::string::npos) << lines[1];
}

// The attention-views pass's strided views have CPU kernels only: a CPU build's graph names them as what
// the CUDA backend cannot run, and a build with strided_views off (what the CUDA commands compile) has none.
TEST(CudaSupport, StridedViewsAreCpuBuildsOnly) {
  for (const bool views : {true, false}) {
    ir::Graph g;
    ir::GraphBuilder gb(g);
    const int x = gb.input("x", DType::f32, {1, 6, 2, 8});  // [B, L, heads, hd]
    const int t = gb.op1("Transpose", {x}, {{"perm", ir::AttrValue(std::vector<int64_t>{0, 2, 1, 3})}});
    const int s = gb.op1(
        "Softmax",
        {gb.op1("MatMul", {t, gb.op1("Transpose", {t}, {{"perm", ir::AttrValue(std::vector<int64_t>{0, 1, 3, 2})}})})},
        {{"axis", ir::AttrValue(int64_t(-1))}});
    gb.output(gb.op1("MatMul", {s, t}), "y");
    compiler::CompileOptions opt;
    opt.strided_views = views;
    const compiler::CompileResult c = compiler::compile_graph(std::move(g), opt);
    const auto lines = cuda_unsupported_nodes(c.graph, c.plan);
    if (views) {
      ASSERT_FALSE(lines.empty());
      EXPECT_NE(lines[0].find("strided view"), std::string::npos) << lines[0];
    } else {
      EXPECT_TRUE(lines.empty()) << lines[0];
    }
  }
}

TEST(CudaSupport, ConvolutionLimitsAreNamed) {
  ir::Graph g;
  ir::GraphBuilder gb(g);
  const int x = gb.input("x", DType::f32, {1, 4, 5, 5});
  const int w = gb.input("w", DType::f32, {6, 4, 3, 3});  // weights that are not constants
  const int conv = gb.op1("Conv", {x, w});
  const int wt = gb.constant(Tensor(DType::f32, {4, 2, 3, 3}), "up.weight");
  const int up = gb.op1("ConvTranspose", {x, wt}, {{"strides", ir::AttrValue(std::vector<int64_t>{2, 2})}});
  gb.output(conv, "conv");
  gb.output(up, "up");
  const auto lines = cuda_unsupported_nodes(g, compiler::plan_memory(g));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("needs constant weights"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("kernel == stride"), std::string::npos) << lines[1];
}

TEST(CudaDevice, NoDeviceIsACleanError) {
  std::string why;
  if (cuda::usable_devices(&why) > 0) GTEST_SKIP() << "a CUDA device is present (tests/kernels_cuda runs on it)";
  EXPECT_FALSE(why.empty());
  Built b = small_graph(false);
  const std::string err = error_of([&] { CudaExecutor ex(b.g, b.plan); });
  EXPECT_EQ(err.rfind("CUDA backend: ", 0), 0u) << err;
  EXPECT_TRUE(err.find("no CUDA device") != std::string::npos || err.find("built without") != std::string::npos) << err;
  EXPECT_EQ(err, "CUDA backend: " + why);
}

TEST(CudaDevice, StatusBecomesAnError) {
  EXPECT_NO_THROW(cuda::check_cuda(nullptr, "anything"));
  EXPECT_EQ(error_of([] { cuda::check_cuda("out of memory", "allocating"); }), "allocating: out of memory");
}

TEST(CudaLaunchShape, ElementwiseGrid) {
  EXPECT_EQ(cuda::elementwise_blocks(0), 1);
  EXPECT_EQ(cuda::elementwise_blocks(1), 1);
  EXPECT_EQ(cuda::elementwise_blocks(cuda::kElementwiseThreads), 1);
  EXPECT_EQ(cuda::elementwise_blocks(cuda::kElementwiseThreads + 1), 2);
  EXPECT_EQ(cuda::elementwise_blocks(int64_t(1) << 40), cuda::kMaxGridBlocks);  // grid-stride covers the rest
}

TEST(CudaLaunchShape, RowsAndAttention) {
  EXPECT_EQ(cuda::row_threads(1), 32);
  EXPECT_EQ(cuda::row_threads(33), 64);
  EXPECT_EQ(cuda::row_threads(1024), 1024);
  EXPECT_EQ(cuda::row_threads(5184), 1024);
  EXPECT_EQ(cuda::attention_blocks(2, 5), 3);  // 10 rows, 4 warps per block
  EXPECT_EQ(cuda::attention_blocks(1, 4), 1);
  EXPECT_EQ(cuda::attention_values_per_lane(16), 1);
  EXPECT_EQ(cuda::attention_values_per_lane(64), 2);
  EXPECT_EQ(cuda::attention_values_per_lane(256), 8);
}

TEST(CudaLayout, ArenaAndWeightsFromThePlan) {
  Built b = small_graph(false);
  const CudaMemoryLayout l = cuda_memory_layout(b.g, b.plan);
  EXPECT_GE(l.arena_bytes, b.plan.arena_bytes);
  EXPECT_EQ(l.arena_bytes % cuda::kDeviceAlignment, 0u);
  EXPECT_LT(l.arena_bytes, b.plan.arena_bytes + cuda::kDeviceAlignment + 1);
  ASSERT_EQ(l.weight_offsets.size(), b.g.initializers.size());
  size_t end = 0;
  for (const auto& [id, off] : l.weight_offsets) {  // aligned, in order, not overlapping
    EXPECT_EQ(off % cuda::kDeviceAlignment, 0u);
    EXPECT_GE(off, end);
    end = off + b.g.initializers.at(id).nbytes();
  }
  EXPECT_LE(end, l.weight_bytes);
  ASSERT_EQ(l.input_offsets.size(), 1u);
  EXPECT_EQ(l.input_bytes, cuda::device_bytes(2 * 8 * 16 * 4));
}

}  // namespace
}  // namespace segmux
