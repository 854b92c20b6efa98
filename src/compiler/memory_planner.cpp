#include "compiler/memory_planner.h"
#include "ir/schemas/shape_math.h"
#include "ir/static_shape.h"

#include <algorithm>
#include <functional>
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

// The constant 1-D integer input i of n, or false.
bool constant_ints(const ir::Graph& g, const ir::Node& n, size_t i, std::vector<int64_t>* out) {
  const Tensor* t = i < n.inputs.size() && n.inputs[i] >= 0 ? g.initializer(n.inputs[i]) : nullptr;
  if (!t || t->rank() != 1 || (t->dtype() != DType::i64 && t->dtype() != DType::i32)) return false;
  out->clear();
  for (int64_t k = 0; k < t->numel(); ++k) out->push_back(int64_t(t->get_as_double(k)));
  return true;
}

// The byte offset of a Slice's output in its input when the output is one contiguous run of it (every
// dim before the sliced one is 1 after slicing, every dim after it whole, step 1), else -1.
int64_t contiguous_slice_offset(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.size() < 3 || n.inputs[0] < 0 || n.outputs.size() != 1 || n.outputs[0] < 0) return -1;
  std::vector<int64_t> starts, ends, axes, steps;
  const bool has_axes = n.inputs.size() > 3 && n.inputs[3] >= 0, has_steps = n.inputs.size() > 4 && n.inputs[4] >= 0;
  if (!constant_ints(g, n, 1, &starts) || !constant_ints(g, n, 2, &ends) ||
      (has_axes && !constant_ints(g, n, 3, &axes)) || (has_steps && !constant_ints(g, n, 4, &steps)))
    return -1;
  const ir::Value& x = g.value(n.inputs[0]);
  if (!ir::has_static_shape(x) || x.dtype != g.value(n.outputs[0]).dtype) return -1;
  std::vector<ir::shape_math::SliceAxis> plan;
  try {
    plan =
        ir::shape_math::slice_plan(n, x.shape, starts, ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr);
  } catch (const Error&) {
    return -1;  // the kernel reports it
  }
  const std::vector<int64_t> strides = contiguous_strides(x.shape);
  int64_t offset = 0;
  bool whole_after = true;  // every dim after the current one is whole
  for (size_t d = plan.size(); d-- > 0;) {
    const ir::shape_math::SliceAxis& a = plan[d];
    const bool whole = a.start == 0 && a.len == x.shape[d] && (a.step == 1 || a.len <= 1);
    if (!whole_after && a.len != 1) return -1;  // a run of this dim holds gaps
    if (!whole && a.step != 1 && a.len > 1) return -1;
    offset += a.start * strides[d];
    whole_after &= whole;
  }
  return offset * int64_t(dtype_size(x.dtype));
}

// Concat inputs / Split outputs that are contiguous slices of the whole (every dim before the axis is 1)
// and 64-byte aligned are placed on the whole's bytes: the producers write the concatenation in place,
// and Split's outputs are views. The kernels skip a piece that is already where it belongs. So is a
// Slice whose output is one contiguous, aligned run of its input (the propagation decoder's memory
// tokens without the object pointers: 53 MB per layer at full size).
void place_slices(const ir::Graph& g, const std::vector<char>& planned, size_t alignment, AliasGroups& groups) {
  for (const ir::Node& node : g.nodes) {
    if (node.domain.empty() && node.op_type == "Slice") {
      const int64_t at = contiguous_slice_offset(g, node);
      const int x = node.inputs.empty() ? -1 : node.inputs[0], y = node.outputs.empty() ? -1 : node.outputs[0];
      // Only a run of at least half the input: the input's bytes then live as long as the run's, and a
      // small run (the object pointers after those tokens) would keep the whole alive for little.
      if (at >= 0 && size_t(at) % alignment == 0 && x >= 0 && y >= 0 && planned[size_t(x)] && planned[size_t(y)] &&
          2 * shape_numel(g.value(y).shape) >= shape_numel(g.value(x).shape))
        groups.place(y, x, size_t(at), true);
      continue;
    }
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

// A group of values on one range of the arena: its bytes and the nodes it is alive over.
struct Buffer {
  int root = -1;
  size_t size = 0;
  int first = 0, last = 0;
  size_t offset = 0;
};

// Places the buffers in `order`, each in the smallest gap that holds it among those already placed and
// alive at the same time (else above them); returns the arena's size.
size_t place_best_fit(std::vector<Buffer>& buffers, const std::vector<size_t>& order) {
  size_t arena = 0;
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, offset+size) of overlapping placed buffers
  for (size_t idx : order) {
    Buffer& b = buffers[idx];
    busy.clear();
    for (size_t p : placed) {
      const Buffer& o = buffers[p];
      if (o.first <= b.last && b.first <= o.last && o.size > 0) busy.emplace_back(o.offset, o.offset + o.size);
    }
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (auto& [lo, hi] : busy) {
      if (lo > cursor) {
        const size_t gap = lo - cursor;
        if (gap >= b.size && gap < best_gap) {
          best_gap = gap;
          best = cursor;
        }
      }
      cursor = std::max(cursor, hi);
    }
    b.offset = best != SIZE_MAX ? best : cursor;
    placed.push_back(idx);
    arena = std::max(arena, b.offset + b.size);
  }
  return arena;
}

// Best fit in a few orders (largest first, earliest first, longest-lived first, latest-ending first),
// keeping the smallest arena: no one order is best for every graph (the full-size propagation decoder:
// 389 MB largest first, 342 MB latest-ending first, against 337 MB alive at once), and each costs one
// pass over the buffers. Returns the arena's size; the buffers keep the offsets of that order.
size_t place_in_best_order(std::vector<Buffer>& buffers) {
  const auto by_size = [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first < buffers[b].first;
  };
  const auto by_first = [&](size_t a, size_t b) {
    return buffers[a].first != buffers[b].first ? buffers[a].first < buffers[b].first : by_size(a, b);
  };
  const auto by_span = [&](size_t a, size_t b) {
    const int sa = buffers[a].last - buffers[a].first, sb = buffers[b].last - buffers[b].first;
    return sa != sb ? sa > sb : by_size(a, b);
  };
  const auto by_last = [&](size_t a, size_t b) {
    return buffers[a].last != buffers[b].last ? buffers[a].last > buffers[b].last : by_size(a, b);
  };
  const std::function<bool(size_t, size_t)> orders[] = {by_size, by_first, by_span, by_last};
  size_t best = 0;
  std::vector<size_t> best_offsets;
  for (const auto& before : orders) {
    std::vector<size_t> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), before);
    const size_t arena = place_best_fit(buffers, order);
    if (best_offsets.empty() || arena < best) {
      best = arena;
      best_offsets.clear();
      for (const Buffer& b : buffers) best_offsets.push_back(b.offset);
    }
  }
  for (size_t b = 0; b < buffers.size(); ++b) buffers[b].offset = best_offsets[b];
  return best;
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

  std::vector<int> buffer_of(nv, -1);
  std::vector<Buffer> buffers;
  for (size_t v = 0; v < nv; ++v) {
    if (!planned[v]) continue;
    size_t at = 0;
    int r = groups.root(int(v), &at);
    if (buffer_of[size_t(r)] < 0) {
      buffer_of[size_t(r)] = int(buffers.size());
      buffers.push_back(Buffer{r, 0, life[v].first, life[v].last, 0});
    }
    Buffer& b = buffers[size_t(buffer_of[size_t(r)])];
    b.size = std::max(b.size, round_up(at + bytes[v], options.alignment));
    b.first = std::min(b.first, life[v].first);
    b.last = std::max(b.last, life[v].last);
  }

  plan.arena_bytes = place_in_best_order(buffers);
  for (size_t v = 0; v < nv; ++v) {
    if (!planned[v]) continue;
    size_t at = 0;
    const int r = groups.root(int(v), &at);
    plan.offsets[v] = int64_t(buffers[size_t(buffer_of[size_t(r)])].offset + at);
  }
  return plan;
}

}  // namespace segmux::compiler
