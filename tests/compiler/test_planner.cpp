// The memory planner: no two tensors that are alive at the same time share bytes (checked on random
// DAGs), views share their input's bytes, and reuse makes the arena smaller than the sum of tensors.
#include <gtest/gtest.h>

#include <random>

#include "compiler/memory_planner.h"

using namespace segmux;

namespace {

// A random DAG of "T" nodes (the planner needs no schemas): each node reads 1-3 earlier values; with
// views, some are Reshapes; with slices, some are Concats / Splits along axis 1 of a [1, n] whole
// (the planner reads only their byte sizes).
ir::Graph random_dag(std::mt19937& rng, int nodes, bool with_views, bool with_slices = false) {
  ir::Graph g;
  std::uniform_int_distribution<int> dim(1, 64);
  g.inputs.push_back(g.add_value("in", DType::f32, Shape{dim(rng), dim(rng)}));
  g.initializers[g.add_value("w", DType::f32, Shape{4})] = Tensor(DType::f32, {4});
  for (int n = 0; n < nodes; ++n) {
    ir::Node node;
    node.name = "n" + std::to_string(n);
    int nv = int(g.values.size());
    std::uniform_int_distribution<int> pick(0, nv - 1);
    int fan_in = 1 + int(rng() % 3);
    for (int k = 0; k < fan_in; ++k) node.inputs.push_back(pick(rng));
    bool view = with_views && rng() % 4 == 0;
    const int slice_kind = with_slices ? int(rng() % 5) : 0;  // 1: Concat, 2: Split, 3: Slice
    const Shape first = g.value(node.inputs[0]).shape;        // a copy: add_value below may move the values
    if (!view && slice_kind == 3 && first.size() == 2 && first[0] > 0) {
      // Rows [r0, r1) of a 2-D value: one contiguous run, placed on it when aligned and at least half.
      node.op_type = "Slice";
      node.inputs.resize(1);
      const int64_t rows = first[0], r0 = rng() % 2 ? 0 : int64_t(rng() % uint32_t(rows));
      const int64_t r1 = r0 + 1 + int64_t(rng() % uint32_t(rows - r0));
      for (int64_t c : {r0, r1, int64_t(0)}) {
        const int k = g.add_value(node.name + ".c" + std::to_string(node.inputs.size()), DType::i64, Shape{1});
        g.initializers[k] = Tensor::from_vector<int64_t>({1}, {c});
        node.inputs.push_back(k);
      }
      node.outputs.push_back(g.add_value(node.name + ".rows", g.value(node.inputs[0]).dtype, Shape{r1 - r0, first[1]}));
    } else if (!view && slice_kind == 1) {
      node.op_type = "Concat";
      node.attrs["axis"] = int64_t(1);
      int64_t total = 0;
      for (int v : node.inputs) total += shape_numel(g.value(v).shape) * int64_t(dtype_size(g.value(v).dtype));
      node.outputs.push_back(g.add_value(node.name + ".cat", DType::f32, Shape{1, total / 4}));
    } else if (!view && slice_kind == 2) {
      node.op_type = "Split";
      node.attrs["axis"] = int64_t(1);
      node.inputs.resize(1);
      const int64_t total =
          shape_numel(g.value(node.inputs[0]).shape) * int64_t(dtype_size(g.value(node.inputs[0]).dtype)) / 4;
      for (int64_t left = total, k = 0; left > 0; ++k) {
        const int64_t n = std::min<int64_t>(left, 16 * (1 + int64_t(rng() % 3)));
        node.outputs.push_back(g.add_value(node.name + ".s" + std::to_string(k), DType::f32, Shape{1, n}));
        left -= n;
      }
    } else if (view) {
      int src = node.inputs[0];
      node.inputs.resize(1);
      node.op_type = "Reshape";
      const ir::Value& sv = g.value(src);
      node.outputs.push_back(g.add_value(node.name + ".out", sv.dtype, Shape{shape_numel(sv.shape)}));
    } else {
      node.op_type = "T";
      int outs = 1 + int(rng() % 2);
      for (int k = 0; k < outs; ++k) {
        DType dt = rng() % 3 == 0 ? DType::i64 : DType::f32;
        node.outputs.push_back(g.add_value(node.name + ".o" + std::to_string(k), dt, Shape{dim(rng), dim(rng)}));
      }
    }
    for (int o : node.outputs) g.value(o).producer = int(g.nodes.size());
    g.nodes.push_back(std::move(node));
  }
  // A few outputs: the last value and some random ones.
  g.outputs.push_back(int(g.values.size()) - 1);
  for (int k = 0; k < 3; ++k) {
    int v = 2 + int(rng() % (g.values.size() - 2));
    if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) g.outputs.push_back(v);
  }
  return g;
}

// Values connected through planned views share bytes legitimately.
std::vector<int> alias_roots(const ir::Graph& g, const MemoryPlan& plan) {
  std::vector<int> root(g.values.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = int(v);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (plan.view_nodes[n]) root[size_t(g.nodes[n].outputs[0])] = root[size_t(g.nodes[n].inputs[0])];
  return root;
}

// The outermost value whose bytes hold v's (see containers()).
int top_of(const std::vector<int>& up, int v) {
  while (up[size_t(v)] >= 0) v = up[size_t(v)];
  return v;
}

// Where each value's bytes legitimately come from: a view's input, or the whole a Concat input / Split
// output (with its views) sits on at exactly its slice (offset relation checked here, not taken from
// the planner). Values under one top are slices of it at their exact places, so where they overlap
// they are the same bytes, written once.
std::vector<int> containers(const ir::Graph& g, const MemoryPlan& plan) {
  std::vector<int> up(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (plan.view_nodes[n]) up[size_t(node.outputs[0])] = node.inputs[0];
    if (node.op_type == "Slice") {  // rows [r0, ...) of a 2-D value (random_dag)
      const int x = node.inputs[0], y = node.outputs[0];
      const Shape& xs = g.value(x).shape;
      const int64_t r0 = g.initializer(node.inputs[1])->data<int64_t>()[0];
      const int64_t at = r0 * xs[1] * int64_t(dtype_size(g.value(x).dtype));
      if (plan.offsets[size_t(x)] >= 0 && plan.offsets[size_t(y)] == plan.offsets[size_t(x)] + at &&
          top_of(up, x) != top_of(up, y))
        up[size_t(top_of(up, y))] = x;
      continue;
    }
    const bool concat = node.op_type == "Concat";
    if (!concat && node.op_type != "Split") continue;
    const int whole = concat ? node.outputs[0] : node.inputs[0];
    if (plan.offsets[size_t(whole)] < 0) continue;
    int64_t at = 0;
    for (int v : concat ? node.inputs : node.outputs) {
      const int t = top_of(up, v);
      if (plan.offsets[size_t(t)] == plan.offsets[size_t(whole)] + at && top_of(up, whole) != t) up[size_t(t)] = whole;
      at += shape_numel(g.value(v).shape) * int64_t(dtype_size(g.value(v).dtype));
    }
  }
  return up;
}

void check_no_live_overlap(const ir::Graph& g, const MemoryPlan& plan) {
  auto life = compiler::value_lifetimes(g);
  auto root = alias_roots(g, plan);
  const std::vector<int> up = containers(g, plan);
  // Extend each alias group's lifetime over all its members (the bytes live as long as any view).
  std::vector<compiler::Lifetime> group(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (plan.offsets[v] < 0) continue;
    auto& gl = group[size_t(root[v])];
    if (gl.first < 0) gl = life[v];
    gl.first = std::min(gl.first, life[v].first);
    gl.last = std::max(gl.last, life[v].last);
  }
  for (size_t a = 0; a < g.values.size(); ++a) {
    if (plan.offsets[a] < 0) continue;
    size_t abytes = size_t(shape_numel(g.values[a].shape)) * dtype_size(g.values[a].dtype);
    ASSERT_LE(size_t(plan.offsets[a]) + abytes, plan.arena_bytes);
    for (size_t b = a + 1; b < g.values.size(); ++b) {
      if (plan.offsets[b] < 0 || root[a] == root[b] || top_of(up, int(a)) == top_of(up, int(b))) continue;
      const auto& la = group[size_t(root[a])];
      const auto& lb = group[size_t(root[b])];
      bool live_together = la.first <= lb.last && lb.first <= la.last;
      if (!live_together) continue;
      size_t bbytes = size_t(shape_numel(g.values[b].shape)) * dtype_size(g.values[b].dtype);
      size_t a0 = size_t(plan.offsets[a]), b0 = size_t(plan.offsets[b]);
      bool disjoint = a0 + abytes <= b0 || b0 + bbytes <= a0 || abytes == 0 || bbytes == 0;
      ASSERT_TRUE(disjoint) << g.values[a].name << " [" << a0 << "+" << abytes << "] and " << g.values[b].name << " ["
                            << b0 << "+" << bbytes << "] are alive together and overlap";
    }
  }
}

}  // namespace

TEST(MemoryPlanner, RandomDagsNeverOverlapLiveTensors) {
  std::mt19937 rng(1234);
  size_t arena = 0, sum = 0;
  for (int trial = 0; trial < 60; ++trial) {
    ir::Graph g = random_dag(rng, 5 + trial, trial % 2 == 1);
    MemoryPlan plan = compiler::plan_memory(g);
    ASSERT_NO_THROW(validate_plan(g, plan));
    check_no_live_overlap(g, plan);
    EXPECT_LE(plan.arena_bytes, plan.sum_tensor_bytes);
    for (int v : g.inputs) EXPECT_EQ(plan.offsets[size_t(v)], MemoryPlan::kNotPlanned);
    for (auto& [id, t] : g.initializers) EXPECT_EQ(plan.offsets[size_t(id)], MemoryPlan::kNotPlanned);
    for (auto off : plan.offsets)
      if (off >= 0) {
        EXPECT_EQ(off % 64, 0);
      }
    arena += plan.arena_bytes;
    sum += plan.sum_tensor_bytes;
  }
  EXPECT_LT(arena, sum);  // reuse happens on chains
}

// With Concat / Split pieces on their slices: only values inside one whole, each at its exact slice,
// share bytes.
TEST(MemoryPlanner, RandomDagsWithSlicesNeverOverlapLiveTensors) {
  std::mt19937 rng(4321);
  int placed = 0, sliced = 0;
  for (int trial = 0; trial < 60; ++trial) {
    ir::Graph g = random_dag(rng, 5 + trial, trial % 2 == 1, true);
    MemoryPlan plan = compiler::plan_memory(g);
    ASSERT_NO_THROW(validate_plan(g, plan));
    check_no_live_overlap(g, plan);
    const std::vector<int> up = containers(g, plan);
    for (size_t v = 0; v < up.size(); ++v) {
      const bool on_whole =
          up[v] >= 0 && g.value(up[v]).producer >= 0 && g.nodes[size_t(g.value(int(v)).producer)].op_type != "Reshape";
      placed += on_whole;
      sliced += on_whole && g.nodes[size_t(g.value(int(v)).producer)].op_type == "Slice";
    }
  }
  EXPECT_GT(placed, 20);  // the property is exercised, not vacuous
  EXPECT_GT(sliced, 5);
}

// A Slice that is one contiguous, aligned run of at least half its input shares the input's bytes; one
// with gaps, a small run, or a misaligned one gets bytes of its own.
TEST(MemoryPlanner, ContiguousSlicesSitOnTheirInput) {
  struct Case {
    Shape x;
    std::vector<int64_t> starts, ends, axes;
    bool on_input;
    int64_t at;  // byte offset in the input when on it
  };
  const std::vector<Case> cases = {
      {{1, 100, 16}, {0}, {90}, {1}, true, 0},            // leading tokens (the decoder's memory)
      {{1, 100, 16}, {4}, {100}, {1}, true, 4 * 16 * 4},  // trailing run, 256-byte aligned
      {{1, 100, 16}, {90}, {100}, {1}, false, 0},         // a small run
      {{1, 100, 8}, {1}, {100}, {1}, false, 0},           // 32 bytes in: misaligned
      {{1, 100, 16}, {0}, {8}, {2}, false, 0},            // gaps: a column range
      {{4, 64}, {2, 0}, {3, 64}, {0, 1}, false, 0},       // one row of four: under half
      {{2, 64}, {1, 0}, {2, 64}, {0, 1}, true, 256},      // the second of two rows
  };
  for (const Case& c : cases) {
    ir::Graph g;
    const int in = g.add_value("in", DType::f32, c.x);
    g.inputs.push_back(in);
    ir::Node t{};
    t.op_type = "T";
    t.name = "t";
    t.inputs = {in};
    const int x = g.add_value("x", DType::f32, c.x);
    t.outputs = {x};
    g.value(x).producer = 0;
    g.nodes.push_back(t);
    ir::Node sl{};
    sl.op_type = "Slice";
    sl.name = "slice";
    sl.inputs = {x};
    Shape ys = c.x;
    for (const std::vector<int64_t>* vals : {&c.starts, &c.ends, &c.axes}) {
      const int k = g.add_value("c" + std::to_string(sl.inputs.size()), DType::i64, Shape{int64_t(vals->size())});
      g.initializers[k] = Tensor::from_vector<int64_t>({int64_t(vals->size())}, *vals);
      sl.inputs.push_back(k);
    }
    for (size_t i = 0; i < c.axes.size(); ++i) ys[size_t(c.axes[i])] = c.ends[i] - c.starts[i];
    const int y = g.add_value("y", DType::f32, ys);
    sl.outputs = {y};
    g.value(y).producer = 1;
    g.nodes.push_back(sl);
    g.outputs.push_back(y);
    const MemoryPlan plan = compiler::plan_memory(g);
    const std::string label = shape_str(c.x) + " starts " + std::to_string(c.starts[0]);
    if (c.on_input) {
      EXPECT_EQ(plan.offsets[size_t(y)], plan.offsets[size_t(x)] + c.at) << label;
    } else {
      const int64_t xb = shape_numel(c.x) * 4, yb = shape_numel(ys) * 4;
      const int64_t x0 = plan.offsets[size_t(x)], y0 = plan.offsets[size_t(y)];
      EXPECT_TRUE(x0 + xb <= y0 || y0 + yb <= x0) << label << ": shares bytes with its input";
    }
  }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // in -> a -> b -> c -> d: only two buffers need to be alive at a time.
  ir::Graph g;
  int prev = g.add_value("in", DType::f32, Shape{256});
  g.inputs.push_back(prev);
  for (int i = 0; i < 4; ++i) {
    ir::Node n;
    n.op_type = "T";
    n.name = "t" + std::to_string(i);
    n.inputs = {prev};
    prev = g.add_value("v" + std::to_string(i), DType::f32, Shape{256});
    n.outputs = {prev};
    g.nodes.push_back(n);
  }
  g.outputs.push_back(prev);
  MemoryPlan plan = compiler::plan_memory(g);
  EXPECT_EQ(plan.sum_tensor_bytes, 4u * 1024u);
  EXPECT_EQ(plan.arena_bytes, 2u * 1024u);
  check_no_live_overlap(g, plan);
}

TEST(MemoryPlanner, ViewsShareTheirInputBytes) {
  ir::Graph g;
  int x = g.add_value("x", DType::f32, Shape{2, 8});
  g.inputs.push_back(x);
  int a = g.add_value("a", DType::f32, Shape{2, 8});
  int r = g.add_value("r", DType::f32, Shape{16});
  int y = g.add_value("y", DType::f32, Shape{16});
  ir::Node n1{"T", "", "t", {x}, {a}, {}};
  ir::Node n2{"Reshape", "", "view", {a}, {r}, {}};
  ir::Node n3{"T", "", "t2", {r}, {y}, {}};
  g.nodes = {n1, n2, n3};
  g.outputs = {y};
  MemoryPlan plan = compiler::plan_memory(g);
  EXPECT_TRUE(plan.view_nodes[1]);
  EXPECT_EQ(plan.offsets[size_t(a)], plan.offsets[size_t(r)]);
  EXPECT_NE(plan.offsets[size_t(r)], plan.offsets[size_t(y)]);
  check_no_live_overlap(g, plan);
  compiler::PlannerOptions no_views;
  no_views.allow_views = false;
  MemoryPlan plain = compiler::plan_memory(g, no_views);
  EXPECT_FALSE(plain.view_nodes[1]);
}

TEST(MemoryPlanner, DynamicShapesAreLeftToTheExecutor) {
  ir::Graph g;
  int x = g.add_value("x", DType::f32, Shape{4});
  g.inputs.push_back(x);
  int d = g.add_value("d", DType::i64, Shape{-1, 1});
  ir::Node n{"NonZero", "", "nz", {x}, {d}, {}};
  g.nodes = {n};
  g.outputs = {d};
  MemoryPlan plan = compiler::plan_memory(g);
  EXPECT_EQ(plan.offsets[size_t(d)], MemoryPlan::kNotPlanned);
}

TEST(MemoryPlanner, ValidatePlanRejectsOverruns) {
  ir::Graph g;
  int x = g.add_value("x", DType::f32, Shape{4});
  g.inputs.push_back(x);
  int y = g.add_value("y", DType::f32, Shape{4});
  g.nodes = {ir::Node{"T", "", "t", {x}, {y}, {}}};
  g.outputs = {y};
  MemoryPlan plan = compiler::plan_memory(g);
  plan.offsets[size_t(y)] = int64_t(plan.arena_bytes);
  EXPECT_THROW(validate_plan(g, plan), Error);
  plan = compiler::plan_memory(g);
  plan.offsets[size_t(x)] = 0;  // inputs never live in the arena
  EXPECT_THROW(validate_plan(g, plan), Error);
  plan = compiler::plan_memory(g);
  plan.view_nodes[0] = 1;  // "T" is not a view op
  EXPECT_THROW(validate_plan(g, plan), Error);
}
