// The instruction-set dispatcher (kernels/isa.h): SEGMUX_ISA parsing and lowering, forced levels,
// distinct loop tables per level, the same bits from the two portable levels, and .smx files compiled
// for AVX-512 refused (a clear error, never SIGILL) where the kernels do not run at that level.
#include <cstdio>
#include <cstring>

#include "compiler/compile.h"
#include "harness.h"
#include "ir/builder.h"
#include "kernels/cpu/simd.h"

namespace segmux::testing_cpu {
namespace {

// A forced level for one scope.
struct ScopedIsa {
  explicit ScopedIsa(Isa isa) : previous(active_isa()) { level = set_active_isa(isa); }
  ~ScopedIsa() { set_active_isa(previous); }
  Isa previous, level;
};

TEST(IsaDispatch, ReportsTheLevels) {
  // scripts/portable_check.sh reads this line to prove the emulated CPU is the one that ran.
  std::printf("[ isa      ] cpu %s, active %s\n", isa_name(cpu_isa()), isa_name(active_isa()));
  EXPECT_LE(int(active_isa()), int(cpu_isa()));
}

TEST(IsaDispatch, EnvironmentValues) {
  EXPECT_EQ(isa_from_env(nullptr, Isa::avx512), Isa::avx512);
  EXPECT_EQ(isa_from_env("", Isa::avx2), Isa::avx2);
  EXPECT_EQ(isa_from_env("generic", Isa::avx512), Isa::generic);
  EXPECT_EQ(isa_from_env("avx2", Isa::avx512), Isa::avx2);
  bool lowered = false;
  EXPECT_EQ(isa_from_env("avx512", Isa::avx2, &lowered), Isa::avx2);
  EXPECT_TRUE(lowered);
  EXPECT_EQ(isa_from_env("avx2", Isa::generic, &lowered), Isa::generic);
  EXPECT_TRUE(lowered);
  EXPECT_EQ(isa_from_env("avx2", Isa::avx2, &lowered), Isa::avx2);
  EXPECT_FALSE(lowered);
  for (const char* bad : {"AVX2", "sse4", "avx512 ", "native"}) {
    try {
      isa_from_env(bad, Isa::avx512);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SEGMUX_ISA"), std::string::npos) << e.what();
    }
  }
  for (Isa i : {Isa::generic, Isa::avx2, Isa::avx512}) EXPECT_EQ(parse_isa(isa_name(i)), i);
}

TEST(IsaDispatch, ForcedLevelsNeverExceedTheCpu) {
  for (Isa i : {Isa::generic, Isa::avx2, Isa::avx512}) {
    ScopedIsa forced(i);
    EXPECT_EQ(int(forced.level), std::min(int(i), int(cpu_isa())));
    EXPECT_EQ(active_isa(), forced.level);
  }
}

TEST(IsaDispatch, EachLevelHasItsOwnLoops) {
  using cpu::eltwise_fns;
  EXPECT_NE(eltwise_fns(Isa::generic).add, eltwise_fns(Isa::avx2).add);
  EXPECT_NE(eltwise_fns(Isa::avx2).add, eltwise_fns(Isa::avx512).add);
  EXPECT_NE(cpu::norm_fns(Isa::generic).softmax_rows, cpu::norm_fns(Isa::avx512).softmax_rows);
  EXPECT_NE(cpu::attention_fns(Isa::avx2).tile, cpu::attention_fns(Isa::avx512).tile);
}

// generic and avx2 compile the same source without FMA contraction and with explicit 16-lane sums:
// results must be identical, so a difference between levels can only come from the AVX-512 code.
TEST(IsaDispatch, PortableLevelsGiveTheSameBits) {
  if (cpu_isa() < Isa::avx2) GTEST_SKIP() << "this CPU has no avx2";
  struct Case {
    ir::Node node;
    std::vector<Input> inputs;
  };
  Tensor x = random_tensor({7, 131}, 5, -8.f, 8.f), s = random_tensor({131}, 6), b = random_tensor({131}, 7);
  Tensor q = random_tensor({2, 37, 32}, 8), k = random_tensor({2, 300, 32}, 9), v = random_tensor({2, 300, 24}, 10);
  std::vector<Case> cases = {
      {make_node("Softmax", {{"axis", int64_t(-1)}}), {{x}}},
      {make_node("Softmax", {{"axis", int64_t(0)}}), {{x}}},
      {make_node("Gelu", {}, "segmux"), {{x}}},
      {make_node("Div"), {{x}, {s}}},
      {make_node("LayerNormalization", {{"axis", int64_t(-1)}}), {{x}, {s, true}, {b, true}}},
      {make_node("Attention", {}, "segmux"), {{q}, {k}, {v}}},
  };
  for (auto& c : cases) {
    std::vector<Tensor> at_generic, at_avx2;
    {
      ScopedIsa forced(Isa::generic);
      at_generic = run_node(cpu_provider(), c.node, c.inputs);
    }
    {
      ScopedIsa forced(Isa::avx2);
      at_avx2 = run_node(cpu_provider(), c.node, c.inputs);
    }
    ASSERT_EQ(at_generic.size(), at_avx2.size()) << c.node.op_type;
    for (size_t i = 0; i < at_generic.size(); ++i)
      EXPECT_TRUE(at_generic[i].identical(at_avx2[i])) << c.node.op_type << " output " << i;
  }
}

segmux::OfflineModel load_bytes(const std::string& bytes) {
  auto st = Storage::allocate(bytes.size());
  std::memcpy(st->data, bytes.data(), bytes.size());
  return segmux::load_offline_model(st, "test model");
}

TEST(IsaDispatch, Avx512ModelsAreRefusedBelowTheAvx512Level) {
  ir::Graph g;
  ir::GraphBuilder gb(g);
  int x = gb.input("x", DType::f32, {2, 3});
  gb.output(gb.op1("Add", {x, gb.constant(random_tensor({3}, 1))}), "y");
  auto c = compiler::compile_graph(std::move(g));
  segmux::WriteOptions w;
  w.target_isa = "x86-64-avx512";
  const std::string avx512_model = segmux::serialize_offline_model(c.graph, c.plan, w);
  w.target_isa = "generic";
  const std::string generic_model = segmux::serialize_offline_model(c.graph, c.plan, w);
  for (Isa level : {Isa::generic, Isa::avx2}) {
    ScopedIsa forced(level);
    EXPECT_EQ(segmux::host_isa(), "generic");
    EXPECT_NO_THROW(load_bytes(generic_model));
    try {
      load_bytes(avx512_model);
      ADD_FAILURE() << "an x86-64-avx512 model loaded at level " << isa_name(level);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("recompile with --target generic"), std::string::npos) << e.what();
    }
  }
  if (cpu_isa() == Isa::avx512) {
    ScopedIsa forced(Isa::avx512);
    EXPECT_EQ(segmux::host_isa(), "x86-64-avx512");
    EXPECT_NO_THROW(load_bytes(avx512_model));
  }
}

}  // namespace
}  // namespace segmux::testing_cpu
