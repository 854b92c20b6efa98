#include "compiler/memory_planner.h"
#include "ir/static_shape.h"

#include <algorithm>
#include <numeric>

namespace segmux::compiler {

namespace {

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

int find_root(std::vector<int>& parent, int x) {
  while (parent[size_t(x)] != x) {
    parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    x = parent[size_t(x)];
  }
  return x;
}

}  // namespace

std::vector<Lifetime> value_lifetimes(const ir::Graph& g) {
  std::vector<Lifetime> life(g.values.size());
  const int end = int(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int o : g.nodes[n].outputs)
      if (o >= 0) life[size_t(o)] = Lifetime{int(n), int(n)};
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs)
      if (v >= 0 && life[size_t(v)].first >= 0) life[size_t(v)].last = std::max(life[size_t(v)].last, int(n));
  for (int v : g.outputs)
    if (life[size_t(v)].first >= 0) life[size_t(v)].last = end;
  return life;
}

MemoryPlan plan_memory(const ir::Graph& g, const PlannerOptions& options) {
  SEGMUX_CHECK(options.alignment > 0 && (options.alignment & (options.alignment - 1)) == 0,
               "memory planner: alignment ", options.alignment, " is not a power of two");
  const size_t nv = g.values.size();
  MemoryPlan plan;
  plan.alignment = options.alignment;
  plan.offsets.assign(nv, MemoryPlan::kNotPlanned);
  plan.view_nodes.assign(g.nodes.size(), 0);

  std::vector<Lifetime> life = value_lifetimes(g);
  std::vector<char> planned(nv, 0);
  std::vector<size_t> bytes(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    const ir::Value& val = g.values[v];
    if (life[v].first < 0 || g.is_initializer(int(v)) || !ir::has_static_shape(val)) continue;
    planned[v] = 1;
    bytes[v] = size_t(shape_numel(val.shape)) * dtype_size(val.dtype);
    plan.sum_tensor_bytes += round_up(bytes[v], options.alignment);
  }

  // Alias groups: a view's output joins its input's group.
  std::vector<int> parent(nv);
  std::iota(parent.begin(), parent.end(), 0);
  if (options.allow_views) {
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const ir::Node& node = g.nodes[n];
      if (!is_view_op(node) || node.inputs.empty() || node.outputs.size() != 1) continue;
      int in = node.inputs[0], out = node.outputs[0];
      if (in < 0 || out < 0 || !planned[size_t(in)] || !planned[size_t(out)]) continue;
      if (bytes[size_t(in)] != bytes[size_t(out)]) continue;
      parent[size_t(find_root(parent, out))] = find_root(parent, in);
      plan.view_nodes[n] = 1;
    }
  }

  struct Buffer {
    int root = -1;
    size_t size = 0;
    int first = 0, last = 0;
    size_t offset = 0;
    bool placed = false;
  };
  std::vector<int> buffer_of(nv, -1);
  std::vector<Buffer> buffers;
  for (size_t v = 0; v < nv; ++v) {
    if (!planned[v]) continue;
    int r = find_root(parent, int(v));
    if (buffer_of[size_t(r)] < 0) {
      buffer_of[size_t(r)] = int(buffers.size());
      buffers.push_back(Buffer{r, 0, life[v].first, life[v].last, 0, false});
    }
    Buffer& b = buffers[size_t(buffer_of[size_t(r)])];
    b.size = std::max(b.size, round_up(bytes[v], options.alignment));
    b.first = std::min(b.first, life[v].first);
    b.last = std::max(b.last, life[v].last);
  }

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed_ids;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, offset+size) of overlapping placed buffers
  for (size_t idx : order) {
    Buffer& b = buffers[idx];
    busy.clear();
    for (size_t p : placed_ids) {
      const Buffer& o = buffers[p];
      if (o.first <= b.last && b.first <= o.last && o.size > 0) busy.emplace_back(o.offset, o.offset + o.size);
    }
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (auto& [lo, hi] : busy) {
      if (lo > cursor) {
        size_t gap = lo - cursor;
        if (gap >= b.size && gap < best_gap) {
          best_gap = gap;
          best = cursor;
        }
      }
      cursor = std::max(cursor, hi);
    }
    b.offset = best != SIZE_MAX ? best : cursor;
    b.placed = true;
    placed_ids.push_back(idx);
    plan.arena_bytes = std::max(plan.arena_bytes, b.offset + b.size);
  }
  for (size_t v = 0; v < nv; ++v)
    if (planned[v]) plan.offsets[v] = int64_t(buffers[size_t(buffer_of[size_t(find_root(parent, int(v)))])].offset);
  return plan;
}

}  // namespace segmux::compiler
