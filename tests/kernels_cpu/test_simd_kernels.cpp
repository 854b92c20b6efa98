// Our vectorised kernels vs their reference kernels over edge shapes (odd sizes, tails that are not a
// multiple of 16, broadcasts, size-1 and empty dims, every axis), at every instruction-set level this
// CPU has (generic, avx2, avx512: kernels/isa.h; levels above the CPU's are skipped).
// Tolerances: element-wise binary ops and Transpose are exact; Softmax / LayerNorm / GroupNorm agree to
// 2e-6 relative + 1e-6 absolute (different summation order, f32 statistics vs the reference's double);
// GELU to 4 ulp-ish (3e-7 relative) on the reference's double-precision erfc.
#include <cstring>

#include "core/tensor_ops.h"
#include "harness.h"
#include "ir/strided_view.h"
#include "kernels/cpu/simd.h"

namespace segmux::testing_cpu {
namespace {

using CpuAttention = AtIsaLevel;
using CpuBinary = AtIsaLevel;
using CpuGelu = AtIsaLevel;
using CpuGroupNorm = AtIsaLevel;
using CpuLayerNorm = AtIsaLevel;
using CpuRope = AtIsaLevel;
using CpuSoftmax = AtIsaLevel;
using CpuSplitConcat = AtIsaLevel;
using CpuTranspose = AtIsaLevel;

TEST_P(CpuBinary, BroadcastShapesMatchReferenceExactly) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{1}, {1}},
                                                      {{17}, {17}},
                                                      {{63}, {}},
                                                      {{}, {65}},
                                                      {{3, 129}, {129}},
                                                      {{5, 127}, {5, 1}},
                                                      {{1, 4, 1}, {3, 1, 5}},
                                                      {{2, 3, 17}, {3, 1}},
                                                      {{0, 3}, {3}},
                                                      {{4, 0}, {1}},
                                                      {{2, 1, 33}, {1, 7, 33}},
                                                      {{64, 64}, {64, 64}},
                                                      {{1, 1}, {300, 300}},
                                                      {{7, 1, 1}, {7, 9, 16}},
                                                      // Short inner runs over three outer dims, on threads
                                                      // (the detector's box bias), and rows cut in pieces.
                                                      {{3, 40, 9, 1, 8}, {3, 40, 1, 9, 8}},
                                                      {{3, 2, 40000}, {3, 1, 40000}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    uint32_t seed = 1;
    for (auto& [sa, sb] : cases) {
      Tensor a = random_tensor(sa, seed++), b = random_tensor(sb, seed++, 0.5f, 2.f);
      expect_matches_reference(make_node(op), {{a}, {b}}, 0, 0,
                               std::string(op) + " " + shape_str(sa) + " " + shape_str(sb));
    }
  }
}

// Expand: broadcast runs (copies and fills), every element size, exactly the reference.
TEST_P(CpuBinary, ExpandMatchesReferenceExactly) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 16, 1, 1}, {1, 16, 67, 65}}, {{3, 1}, {2, 3, 129}}, {{129}, {4, 129}}, {{1}, {0, 3}},
      {{2, 1, 5}, {2, 7, 5}},           {{1, 1}, {300, 300}}};
  uint32_t seed = 80;
  for (auto& [xs, to] : cases) {
    Tensor x = random_tensor(xs, seed++);
    Tensor shape = Tensor::from_vector<int64_t>({int64_t(to.size())}, to);
    const std::string label = "expand " + shape_str(xs) + " -> " + shape_str(to);
    expect_matches_reference(make_node("Expand"), {{x}, {shape, true}}, 0, 0, label + " f32");
    std::vector<int64_t> ints(size_t(x.numel()));
    for (size_t i = 0; i < ints.size(); ++i) ints[i] = int64_t(i) * 1000003 - 7;
    expect_matches_reference(make_node("Expand"), {{Tensor::from_vector<int64_t>(xs, ints)}, {shape, true}}, 0, 0,
                             label + " i64");
    std::vector<uint8_t> bytes(size_t(x.numel()));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 37 + 1);
    expect_matches_reference(make_node("Expand"), {{Tensor::from_vector<uint8_t>(xs, bytes)}, {shape, true}}, 0, 0,
                             label + " u8");
  }
}

TEST_P(CpuBinary, IntegerInputsFallBackToReference) {
  Tensor a = Tensor::from_vector<int64_t>({2}, {1, 2});
  bool handled = true;
  run_node(cpu_provider(), make_node("Add"), {{a}, {a}}, 2, &handled);
  EXPECT_FALSE(handled);
}

TEST_P(CpuGelu, MatchesDoublePrecisionReference) {
  // A dense sweep of the interesting range plus extremes.
  std::vector<float> xs;
  for (float x = -12.f; x <= 12.f; x += 0.0007f) xs.push_back(x);
  for (float x : {0.f, -0.f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 0.49999f, 0.5f, -0.5f, 0.70710677f, 30.f, -30.f, 1e30f,
                  -1e30f, INFINITY, -INFINITY, NAN})
    xs.push_back(x);
  Tensor x = Tensor::from_vector<float>({int64_t(xs.size())}, xs);
  ir::Node n = make_node("Gelu", {}, "segmux");
  auto got = run_node(cpu_provider(), n, {{x}});
  auto want = run_node(reference_provider(), n, {{x}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(close(got[0], want[0], 1e-37, 3e-7));
}

TEST_P(CpuGelu, OddSizes) {
  for (int64_t n : {1, 3, 15, 16, 17, 63, 65, 129, 40000}) {
    Tensor x = random_tensor({n}, uint32_t(n), -6.f, 6.f);
    expect_matches_reference(make_node("Gelu", {}, "segmux"), {{x}}, 1e-37, 3e-7, "gelu n=" + std::to_string(n));
  }
}

TEST_P(CpuSoftmax, EveryAxisAndOddSizes) {
  const std::vector<Shape> shapes = {{1},        {17},      {3, 17}, {5, 129}, {2, 3, 4, 5},
                                     {4, 65, 3}, {1, 1, 1}, {0, 4},  {2, 1000}};
  uint32_t seed = 7;
  for (auto& s : shapes) {
    for (int64_t axis = -1; axis < int64_t(s.size()); ++axis) {
      Tensor x = random_tensor(s, seed++, -20.f, 20.f);
      expect_matches_reference(make_node("Softmax", {{"axis", axis}}), {{x}}, 1e-6, 2e-6,
                               "softmax " + shape_str(s) + " axis " + std::to_string(axis));
    }
  }
}

TEST_P(CpuSoftmax, MinusInfinityEntries) {
  Tensor x = random_tensor({3, 37}, 3);
  for (int j = 0; j < 37; j += 2) x.data<float>()[37 + j] = -INFINITY;
  expect_matches_reference(make_node("Softmax", {{"axis", int64_t(-1)}}), {{x}}, 1e-6, 2e-6, "softmax -inf");
}

TEST_P(CpuLayerNorm, AxesBiasAndStatsOutputs) {
  struct Case {
    Shape x;
    int64_t axis;
    bool bias;
  };
  const std::vector<Case> cases = {{{1, 1}, -1, true},     {{3, 17}, -1, true},    {{7, 1024}, -1, false},
                                   {{2, 3, 65}, -2, true}, {{2, 5, 129}, 1, true}, {{4, 16}, 0, true}};
  uint32_t seed = 11;
  for (auto& c : cases) {
    Shape ns(c.x.begin() + (c.axis < 0 ? int64_t(c.x.size()) + c.axis : c.axis), c.x.end());
    Tensor x = random_tensor(c.x, seed++, -3.f, 5.f), s = random_tensor(ns, seed++), b = random_tensor(ns, seed++);
    std::vector<Input> in = {{x}, {s, true}};
    if (c.bias) in.push_back({b, true});
    const std::string label = "layernorm " + shape_str(c.x) + " axis " + std::to_string(c.axis);
    expect_matches_reference(make_node("LayerNormalization", {{"axis", c.axis}, {"epsilon", 1e-5f}}), in, 1e-5, 2e-6,
                             label);
    expect_matches_reference(make_node("LayerNormalization", {{"axis", c.axis}, {"epsilon", 1e-5f}}, "", 3), in, 1e-5,
                             2e-6, label + " with Mean/InvStdDev");
  }
}

TEST_P(CpuGroupNorm, GroupsAndSpatialSizes) {
  struct Case {
    Shape x;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{1, 4, 3, 3}, 2}, {{2, 32, 17, 17}, 8}, {{1, 6, 1}, 3}, {{1, 8, 65}, 8}, {{1, 4, 2, 2, 3}, 1}};
  uint32_t seed = 21;
  for (auto& c : cases) {
    Tensor x = random_tensor(c.x, seed++, -2.f, 4.f);
    Tensor s = random_tensor({c.x[1]}, seed++), b = random_tensor({c.x[1]}, seed++);
    expect_matches_reference(make_node("GroupNorm", {{"num_groups", c.groups}, {"epsilon", 1e-5f}}, "segmux"),
                             {{x}, {s, true}, {b, true}}, 1e-5, 2e-6, "groupnorm " + shape_str(c.x));
  }
}

TEST_P(CpuTranspose, PermutationsAndElementSizes) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {{{17, 33}, {1, 0}},
                                                                     {{3, 1, 5}, {2, 0, 1}},
                                                                     {{2, 3, 4, 5}, {0, 2, 1, 3}},
                                                                     {{2, 3, 4, 5}, {3, 2, 1, 0}},
                                                                     {{1, 65, 129}, {0, 2, 1}},
                                                                     {{4, 9, 9, 16}, {0, 2, 1, 3}},
                                                                     {{2, 16, 24, 24, 8}, {0, 2, 3, 1, 4}},
                                                                     {{0, 3}, {1, 0}},
                                                                     {{7}, {0}}};
  uint32_t seed = 31;
  for (auto& [s, perm] : cases) {
    Tensor x = random_tensor(s, seed++);
    const std::string label = "transpose " + shape_str(s);
    expect_matches_reference(make_node("Transpose", {{"perm", perm}}), {{x}}, 0, 0, label + " f32");
    expect_matches_reference(make_node("Transpose", {{"perm", perm}}), {{x.cast(DType::i64)}}, 0, 0, label + " i64");
    expect_matches_reference(make_node("Transpose", {{"perm", perm}}), {{x.cast(DType::f16)}}, 0, 0, label + " f16");
    Tensor u8 = x.cast(DType::i32);
    expect_matches_reference(make_node("Transpose", {{"perm", perm}}), {{u8}}, 0, 0, label + " i32");
  }
  // Default perm (reverse).
  expect_matches_reference(make_node("Transpose"), {{random_tensor({3, 5, 7}, 3)}}, 0, 0, "transpose default perm");
}

TEST_P(CpuAttention, LengthsHeadSizesAndMasks) {
  struct Case {
    Shape lead;
    int64_t lq, lk, d, dv;
  };
  const std::vector<Case> cases = {{{1, 1}, 1, 1, 16, 16},      {{2, 3}, 17, 63, 64, 64}, {{1, 2}, 65, 129, 64, 32},
                                   {{3}, 127, 200, 80, 80},     {{1, 1}, 130, 3, 8, 5},   {{2}, 64, 128, 64, 64},
                                   {{1, 2, 2}, 33, 257, 16, 48}};
  uint32_t seed = 41;
  for (auto& c : cases) {
    Shape qs = c.lead, ks = c.lead, vs = c.lead;
    qs.insert(qs.end(), {c.lq, c.d});
    ks.insert(ks.end(), {c.lk, c.d});
    vs.insert(vs.end(), {c.lk, c.dv});
    Tensor q = random_tensor(qs, seed++, -2.f, 2.f), k = random_tensor(ks, seed++, -2.f, 2.f),
           v = random_tensor(vs, seed++);
    const std::string label = "attention q" + shape_str(qs) + " k" + shape_str(ks) + " v" + shape_str(vs);
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}}, 2e-6, 1e-5, label);
    expect_matches_reference(make_node("Attention", {{"scale", 0.3f}}, "segmux"), {{q}, {k}, {v}}, 2e-6, 1e-5,
                             label + " scale");
    // Additive mask broadcast over heads, with some -inf (one query row fully masked).
    Shape ms(c.lead.size(), 1);
    ms.insert(ms.end(), {c.lq, c.lk});
    Tensor m = random_tensor(ms, seed++, -1.f, 1.f);
    for (int64_t j = 0; j < c.lk; j += 3) m.data<float>()[j] = -INFINITY;
    if (c.lq > 1)
      for (int64_t j = 0; j < c.lk; ++j) m.data<float>()[c.lk + j] = -INFINITY;
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {m}}, 2e-6, 1e-5,
                             label + " f32 mask");
    // Bool key-padding mask [lead0, 1.., 1, Lk]: true = attend.
    Shape bs(c.lead.size(), 1);
    bs[0] = c.lead[0];
    bs.insert(bs.end(), {1, c.lk});
    Tensor bm(DType::boolean, bs);
    for (int64_t i = 0; i < bm.numel(); ++i) bm.data<bool>()[i] = (i % 5) != 1;
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {bm}}, 2e-6, 1e-5,
                             label + " bool mask");
  }
}

// Key-only masks as the memory attention builds them: -1e30 (or false) on whole runs of keys longer than
// a key block, so that the AVX-512 tile defers and skips blocks; odd query counts around its 48-query
// sub-tiles and 192-row tiles, head dims that are not a multiple of 8.
TEST_P(CpuAttention, PaddedKeySlotsLikeTheMemoryAttention) {
  struct Case {
    int64_t heads, lq, lk, d, dv;
  };
  const std::vector<Case> cases = {
      {2, 47, 700, 32, 32}, {1, 193, 1100, 16, 24}, {3, 49, 530, 33, 7}, {1, 400, 300, 8, 8}};
  uint32_t seed = 71;
  for (auto& c : cases) {
    Tensor q = random_tensor({1, c.heads, c.lq, c.d}, seed++, -2.f, 2.f);
    Tensor k = random_tensor({1, c.heads, c.lk, c.d}, seed++, -2.f, 2.f);
    Tensor v = random_tensor({1, c.heads, c.lk, c.dv}, seed++);
    const std::string label = "attention h" + std::to_string(c.heads) + " lq " + std::to_string(c.lq) + " lk " +
                              std::to_string(c.lk) + " d " + std::to_string(c.d) + "/" + std::to_string(c.dv);
    // Slots of 150 keys, every other one empty (the first valid), as f32 -1e30 and as bool.
    Tensor m(DType::f32, {1, 1, 1, c.lk});
    Tensor bm(DType::boolean, {1, 1, 1, c.lk});
    for (int64_t j = 0; j < c.lk; ++j) {
      const bool valid = (j / 150) % 2 == 0;
      m.data<float>()[j] = valid ? 0.f : -1e30f;
      bm.data<bool>()[j] = valid;
    }
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {m}}, 2e-6, 1e-5,
                             label + " -1e30 slots");
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {bm}}, 2e-6, 1e-5,
                             label + " bool slots");
    // Every key masked: -1e30 everywhere gives the plain average of v (all scores equal), false
    // everywhere gives zeros.
    Tensor all(DType::f32, {1, 1, 1, c.lk});
    std::fill(all.data<float>(), all.data<float>() + c.lk, -1e30f);
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {all}}, 2e-6, 1e-5,
                             label + " all -1e30");
    Tensor none(DType::boolean, {1, 1, 1, c.lk});
    std::fill(none.data<bool>(), none.data<bool>() + c.lk, false);
    expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {none}}, 2e-6, 1e-5,
                             label + " all false");
  }
}

// A masked key block that still wins: bias -1e6 on keys 256.. 511, but one of them has a score far above
// the bias (k aligned with every q), so the softmax is that key's v. A tile that skipped the block on its
// bias alone would average the unmasked keys instead.
TEST_P(CpuAttention, MaskedBlockWithAHugeScoreIsNotSkipped) {
  const int64_t lq = 100, lk = 640, d = 16;
  Tensor q = random_tensor({1, 1, lq, d}, 91, 0.5f, 1.5f);
  Tensor k = random_tensor({1, 1, lk, d}, 92, -1.f, 1.f), v = random_tensor({1, 1, lk, d}, 93);
  for (int64_t x = 0; x < d; ++x) k.data<float>()[300 * d + x] = 1e6f;
  Tensor m(DType::f32, {1, 1, 1, lk});
  for (int64_t j = 0; j < lk; ++j) m.data<float>()[j] = j >= 256 && j < 512 ? -1e6f : 0.f;
  auto got = run_node(cpu_provider(), make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {m}});
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t x = 0; x < d; ++x)
      ASSERT_EQ(got[0].data<float>()[i * d + x], v.data<float>()[300 * d + x]) << "row " << i << " dim " << x;
  expect_matches_reference(make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {m}}, 2e-6, 1e-5, "huge score");
}

// Nodes compiled in bf16: on a CPU with AVX512_BF16 at the avx512 level the products take bf16-rounded
// operands (Q after scaling, K, P, V; 8 significant bits), so the result is compared with the f32
// reference at a bf16 tolerance: logits of these inputs (|q|, |k| <= 2, scale 1/sqrt(D)) are off by up to
// ~2^-8 sqrt(D) ~ 0.02 at worst, weights by ~2 %; the errors seen are <= 3e-3 on outputs |v| <= 1, the
// tolerance is 1e-2. Elsewhere the request falls back to the f32 tile: the same bits as a node without it.
TEST_P(CpuAttention, Bf16NodesMatchTheReferenceAtBf16Precision) {
  struct Case {
    int64_t heads, lq, lk, d, dv;
  };
  // 601 queries: more than one tile (8 x 48 queries).
  const std::vector<Case> cases = {
      {2, 47, 700, 32, 32}, {1, 193, 300, 33, 7}, {2, 5, 17, 64, 64}, {1, 601, 260, 32, 32}};
  const bool bf16_tile = GetParam() == Isa::avx512 && cpu::attention_bf16_fns(Isa::avx512) != nullptr;
  ir::Node nb = make_node("Attention", {{"segmux_precision", std::string("bf16")}}, "segmux");
  uint32_t seed = 101;
  for (auto& c : cases) {
    Tensor q = random_tensor({1, c.heads, c.lq, c.d}, seed++, -2.f, 2.f);
    Tensor k = random_tensor({1, c.heads, c.lk, c.d}, seed++, -2.f, 2.f);
    Tensor v = random_tensor({1, c.heads, c.lk, c.dv}, seed++);
    Tensor slots(DType::f32, {1, 1, 1, c.lk});  // key-only: slots of 150 keys, every other one empty
    for (int64_t j = 0; j < c.lk; ++j) slots.data<float>()[j] = (j / 150) % 2 == 0 ? 0.f : -1e30f;
    Tensor general = random_tensor({1, 1, c.lq, c.lk}, seed++, -1.f, 1.f);  // per query and key
    for (int64_t j = 0; j < c.lk; j += 3) general.data<float>()[j] = -INFINITY;
    const std::string label = "bf16 attention lq " + std::to_string(c.lq) + " lk " + std::to_string(c.lk) + " d " +
                              std::to_string(c.d) + "/" + std::to_string(c.dv);
    for (const std::vector<Input>& in :
         std::vector<std::vector<Input>>{{{q}, {k}, {v}}, {{q}, {k}, {v}, {slots}}, {{q}, {k}, {v}, {general}}}) {
      const std::string l = label + " inputs " + std::to_string(in.size());
      auto got = run_node(cpu_provider(), nb, in);
      auto want = run_node(reference_provider(), make_node("Attention", {}, "segmux"), in, 1);
      ASSERT_EQ(got.size(), 1u) << l;
      if (bf16_tile) {
        EXPECT_TRUE(close(got[0], want[0], 1e-2, 0)) << l;
        // It is the bf16 tile: the f32 one is within 1e-5.
        EXPECT_FALSE(close(got[0], want[0], 1e-5, 2e-6)) << l << ": bf16 request computed in f32";
      } else {
        auto f32 = run_node(cpu_provider(), make_node("Attention", {}, "segmux"), in);
        EXPECT_TRUE(close(got[0], f32[0], 0, 0)) << l << ": fallback is not the f32 tile";
      }
    }
  }
}

// The bf16 tile takes a block's probabilities in one pass against the running max of the earlier blocks
// and redoes it in two passes when a score exceeds that max by more than its margin, or while a query has
// no finite max yet. Keys 600..699 get a bias of +100 (e^(s - m) of the earlier max would overflow to inf
// without the redo), and in the per-query mask the first 20 queries see no key below 300 (-inf: their max
// is -inf through the first block) and queries 20..29 have -1e30 on every key (a uniform average: s - m
// must be 0 there, which s log2e - m log2e is not). Both must still match the reference at the bf16
// tolerance.
TEST_P(CpuAttention, Bf16TileRedoesBlocksBeyondItsRunningMax) {
  const int64_t lq = 50, lk = 900, d = 32;
  Tensor q = random_tensor({1, 2, lq, d}, 201, -2.f, 2.f), k = random_tensor({1, 2, lk, d}, 202, -2.f, 2.f);
  Tensor v = random_tensor({1, 2, lk, d}, 203);
  Tensor keys(DType::f32, {1, 1, 1, lk}), general(DType::f32, {1, 1, lq, lk});
  for (int64_t j = 0; j < lk; ++j) keys.data<float>()[j] = j >= 600 && j < 700 ? 100.f : 0.f;
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j)
      general.data<float>()[i * lk + j] = i < 20 && j < 300   ? -INFINITY
                                          : i >= 20 && i < 30 ? -1e30f
                                                              : keys.data<float>()[j];
  ir::Node nb = make_node("Attention", {{"segmux_precision", std::string("bf16")}}, "segmux");
  for (const Tensor& mask : {keys, general}) {
    const std::string l = "mask " + shape_str(mask.shape());
    auto got = run_node(cpu_provider(), nb, {{q}, {k}, {v}, {mask}});
    auto want = run_node(reference_provider(), make_node("Attention", {}, "segmux"), {{q}, {k}, {v}, {mask}}, 1);
    ASSERT_EQ(got.size(), 1u) << l;
    EXPECT_TRUE(close(got[0], want[0], 1e-2, 0)) << l;
  }
}

TEST_P(CpuSplitConcat, AxesSizesAndDtypes) {
  struct Case {
    Shape x;
    int64_t axis;
    std::vector<int64_t> sizes;
  };
  const std::vector<Case> cases = {{{3, 9, 64}, 0, {1, 1, 1}}, {{9, 576, 3072}, -1, {1024, 1024, 1024}},
                                   {{2, 7, 5}, 1, {3, 0, 4}},  {{4, 6}, 1, {1, 5}},
                                   {{2, 3, 4, 2}, -1, {1, 1}}, {{5}, 0, {2, 3}}};
  uint32_t seed = 61;
  for (auto& c : cases) {
    Tensor x = random_tensor(c.x, seed++);
    const std::string label = "split " + shape_str(c.x) + " axis " + std::to_string(c.axis);
    Tensor sizes = Tensor::from_vector<int64_t>({int64_t(c.sizes.size())}, c.sizes);
    ir::Node split = make_node("Split", {{"axis", c.axis}}, "", int(c.sizes.size()));
    for (DType t : {DType::f32, DType::f16, DType::i64, DType::u8}) {
      Tensor xt = x.cast(t);
      expect_matches_reference(split, {{xt}, {sizes, true}}, 0, 0, label + " " + std::string(dtype_name(t)));
      // Concat of the pieces gives x back.
      auto parts = run_node(reference_provider(), split, {{xt}, {sizes, true}});
      std::vector<Input> in;
      for (auto& p : parts) in.push_back({p});
      expect_matches_reference(make_node("Concat", {{"axis", c.axis}}), in, 0, 0, "concat of " + label);
    }
  }
}

// q, k, v read through strided views of one ViT-style qkv tensor [windows, N, 3, heads, hd] and the
// output written permuted to [windows, N, heads, hd] (ir/strided_view.h, as the attention-views pass
// writes them): at each ISA level and with the bf16 tile, against the reference kernel (which gathers
// the views first), and bit for bit against the same kernel on gathered copies. A view that reads past
// its input is an error naming the node, not a read out of bounds.
TEST_P(CpuAttention, StridedViewsAndPermutedOutput) {
  struct Case {
    int64_t windows, n, heads, hd;
  };
  uint32_t seed = 141;
  for (const Case& c : std::vector<Case>{{1, 70, 2, 16}, {3, 49, 3, 8}, {2, 130, 1, 32}}) {
    Tensor qkv = random_tensor({c.windows, c.n, 3, c.heads, c.hd}, seed++, -2.f, 2.f);
    const int64_t row = 3 * c.heads * c.hd;
    std::vector<Tensor> gathered;
    for (const bool bf16 : {false, true}) {
      ir::Attrs attrs = {{ir::kOutputPerm, std::vector<int64_t>{0, 2, 1, 3}}};
      if (bf16) attrs["segmux_precision"] = std::string("bf16");
      ir::Node viewed = make_node("Attention", attrs, "segmux");
      ir::Node plain =
          make_node("Attention", bf16 ? ir::Attrs{{"segmux_precision", std::string("bf16")}} : ir::Attrs{}, "segmux");
      std::vector<Input> parts;
      for (int i = 0; i < 3; ++i) {
        const ir::StridedView view{i * c.heads * c.hd, {c.windows, c.heads, c.n, c.hd}, {c.n * row, c.hd, row, 1}};
        ir::set_input_view(viewed, i, view);
        parts.push_back({permute(take(qkv, 2, i, 1).reshaped({c.windows, c.n, c.heads, c.hd}), {0, 2, 1, 3})});
      }
      const std::string label =
          "attention views " + std::to_string(c.windows) + "x" + std::to_string(c.n) + (bf16 ? " bf16" : " f32");
      if (!bf16) expect_matches_reference(viewed, {{qkv}, {qkv}, {qkv}}, 2e-6, 1e-5, label);
      const auto got = run_node(cpu_provider(), viewed, {{qkv}, {qkv}, {qkv}});
      const auto want = run_node(cpu_provider(), plain, parts);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(close(got[0], permute(want[0], {0, 2, 1, 3}), 0, 0)) << label << ": not the gathered result";
    }
    ir::Node hostile = make_node("Attention", {}, "segmux");
    for (int i = 0; i < 3; ++i)
      ir::set_input_view(hostile, i,
                         {2 * c.heads * c.hd + 1, {c.windows, c.heads, c.n, c.hd}, {c.n * row, c.hd, row, 1}});
    try {
      run_node(cpu_provider(), hostile, {{qkv}, {qkv}, {qkv}});
      ADD_FAILURE() << "a view past its input ran";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("reads past"), std::string::npos) << e.what();
    }
  }
}

TEST_P(CpuRope, StridedViewOfTheQkvTensor) {
  uint32_t seed = 61;
  for (const Shape& qkv_shape : std::vector<Shape>{{1, 24, 3, 2, 16}, {3, 9, 3, 4, 8}}) {
    const int64_t W = qkv_shape[0], N = qkv_shape[1], H = qkv_shape[3], hd = qkv_shape[4], row = 3 * H * hd;
    Tensor qkv = random_tensor(qkv_shape, seed++, -3.f, 3.f);
    Tensor c = random_tensor({N, hd / 2, 1}, seed++), s = random_tensor({N, hd / 2, 1}, seed++);
    for (int part = 0; part < 2; ++part) {
      ir::Node n = make_node("Rope", {}, "segmux");
      ir::set_input_view(n, 0, {part * H * hd, {W, H, N, hd}, {N * row, hd, row, 1}});
      expect_matches_reference(n, {{qkv}, {c, true}, {s, true}}, 0, 0, "rope view " + shape_str(qkv_shape));
      Tensor x = permute(take(qkv, 2, part, 1).reshaped({W, N, H, hd}), {0, 2, 1, 3});
      const auto got = run_node(cpu_provider(), n, {{qkv}, {c, true}, {s, true}});
      const auto want = run_node(cpu_provider(), make_node("Rope", {}, "segmux"), {{x}, {c, true}, {s, true}});
      EXPECT_TRUE(close(got[0], want[0], 0, 0)) << "rope view " << shape_str(qkv_shape) << ": not the gathered result";
    }
  }
}

TEST_P(CpuRope, RowsAndHeadSizes) {
  struct Case {
    Shape x;
  };
  uint32_t seed = 51;
  for (const Shape& xs : std::vector<Shape>{{1, 2}, {3, 5, 8}, {2, 4, 17, 64}, {9, 7, 40}, {2, 3, 34}}) {
    const int64_t L = xs[xs.size() - 2], half = xs.back() / 2;
    Tensor x = random_tensor(xs, seed++, -3.f, 3.f);
    Tensor c = random_tensor({L, half, 1}, seed++), s = random_tensor({L, half, 1}, seed++);
    // Same products and sums as the reference: bit-exact.
    expect_matches_reference(make_node("Rope", {}, "segmux"), {{x}, {c, true}, {s, true}}, 0, 0,
                             "rope " + shape_str(xs));
  }
  // Tables computed at run time are left to the reference kernel.
  bool handled = true;
  run_node(cpu_provider(), make_node("Rope", {}, "segmux"),
           {{random_tensor({2, 4}, 1)}, {random_tensor({2, 2}, 2)}, {random_tensor({2, 2}, 3)}}, 2, &handled);
  EXPECT_FALSE(handled);
}

SEGMUX_FOR_EACH_ISA(CpuAttention);
SEGMUX_FOR_EACH_ISA(CpuBinary);
SEGMUX_FOR_EACH_ISA(CpuGelu);
SEGMUX_FOR_EACH_ISA(CpuGroupNorm);
SEGMUX_FOR_EACH_ISA(CpuLayerNorm);
SEGMUX_FOR_EACH_ISA(CpuRope);
SEGMUX_FOR_EACH_ISA(CpuSoftmax);
SEGMUX_FOR_EACH_ISA(CpuSplitConcat);
SEGMUX_FOR_EACH_ISA(CpuTranspose);

}  // namespace
}  // namespace segmux::testing_cpu
