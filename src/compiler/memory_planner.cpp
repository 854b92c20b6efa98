#include "compiler/memory_planner.h"
#include "ir/static_shape.h"

#include <algorithm>
#include <numeric>

namespace segmux::compiler {

namespace {

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Alias groups: a union-find whose links carry byte offsets. A value lives at its group's offset plus
// its offset inside the group (0 for views; a slice's position for Concat inputs and Split outputs).
struct AliasGroups {
  std::vector<int> parent;
  std::vector<size_t> delta;    // byte offset of a value inside its parent
  std::vector<char> composite;  // per root: holds values at different offsets (a Concat / Split)

  explicit AliasGroups(size_t n) : parent(n), delta(n, 0), composite(n, 0) {
    std::iota(parent.begin(), parent.end(), 0);
  }
  // The root of x's group; *offset = x's byte offset inside it.
  int root(int x, size_t* offset = nullptr) {
    size_t off = 0;
    int r = x;
    for (; parent[size_t(r)] != r; r = parent[size_t(r)]) off += delta[size_t(r)];
    for (size_t acc = off; parent[size_t(x)] != x;) {  // path compression, keeping the offsets
      const int next = parent[size_t(x)];
      const size_t d = delta[size_t(x)];
      parent[size_t(x)] = r;
      delta[size_t(x)] = acc;
      acc -= d;
      x = next;
    }
    if (offset) *offset = off;
    return r;
  }
  // Puts the group of `member` (a plain group: one value and its views) at byte `at` of `host`'s value;
  // `slice`: at a slice of it (the host's group then holds values at different offsets).
  bool place(int member, int host, size_t at, bool slice) {
    size_t member_off = 0, host_off = 0;
    const int m = root(member, &member_off), h = root(host, &host_off);
    if (m == h || composite[size_t(m)] || member_off != 0) return false;
    parent[size_t(m)] = h;
    delta[size_t(m)] = host_off + at;
    composite[size_t(h)] |= char(slice);
    return true;
  }
};

// Concat inputs / Split outputs that are contiguous slices of the whole (every dim before the axis is 1)
// and 64-byte aligned are placed on the whole's bytes: the producers write the concatenation in place,
// and Split's outputs are views. The kernels skip a piece that is already where it belongs.
void place_slices(const ir::Graph& g, const std::vector<char>& planned, size_t alignment, AliasGroups& groups) {
  for (const ir::Node& node : g.nodes) {
    const bool concat = node.op_type == "Concat", split = node.op_type == "Split";
    if (!node.domain.empty() || !(concat || split) || node.inputs.empty() || node.outputs.empty()) continue;
    const int whole = concat ? node.outputs[0] : node.inputs[0];
    if (whole < 0 || !planned[size_t(whole)]) continue;
    const Shape& ws = g.value(whole).shape;
    int64_t axis = node.attr_int("axis", 0);
    if (axis < 0) axis += int64_t(ws.size());
    if (axis < 0 || axis >= int64_t(ws.size())) continue;
    bool contiguous = true;
    for (int64_t d = 0; d < axis; ++d) contiguous &= ws[size_t(d)] == 1;
    if (!contiguous) continue;
    const std::vector<int>& pieces = concat ? node.inputs : node.outputs;
    size_t at = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const int v = pieces[i];
      // An omitted Split output or a piece of unknown size: the rest cannot be located.
      if (v < 0 || !ir::has_static_shape(g.value(v))) break;
      bool repeated = false;
      for (size_t j = 0; j < i; ++j) repeated |= pieces[j] == v;
      if (planned[size_t(v)] && !repeated && at % alignment == 0) groups.place(v, whole, at, true);
      at += size_t(shape_numel(g.value(v).shape)) * dtype_size(g.value(v).dtype);
    }
  }
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
  AliasGroups groups(nv);
  if (options.allow_views) {
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const ir::Node& node = g.nodes[n];
      if (!is_view_op(node) || node.inputs.empty() || node.outputs.size() != 1) continue;
      int in = node.inputs[0], out = node.outputs[0];
      if (in < 0 || out < 0 || !planned[size_t(in)] || !planned[size_t(out)]) continue;
      if (bytes[size_t(in)] != bytes[size_t(out)]) continue;
      if (groups.place(out, in, 0, false)) plan.view_nodes[n] = 1;
    }
    place_slices(g, planned, options.alignment, groups);
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
    size_t at = 0;
    int r = groups.root(int(v), &at);
    if (buffer_of[size_t(r)] < 0) {
      buffer_of[size_t(r)] = int(buffers.size());
      buffers.push_back(Buffer{r, 0, life[v].first, life[v].last, 0, false});
    }
    Buffer& b = buffers[size_t(buffer_of[size_t(r)])];
    b.size = std::max(b.size, round_up(at + bytes[v], options.alignment));
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
  for (size_t v = 0; v < nv; ++v) {
    if (!planned[v]) continue;
    size_t at = 0;
    const int r = groups.root(int(v), &at);
    plan.offsets[v] = int64_t(buffers[size_t(buffer_of[size_t(r)])].offset + at);
  }
  return plan;
}

}  // namespace segmux::compiler
