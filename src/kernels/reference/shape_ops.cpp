// Reference kernels that move data without arithmetic (dtype-agnostic, byte-wise): Reshape,
// Transpose, Concat, Split, Slice, Gather, Expand, Tile, Pad, DepthToSpace, ... and the ops that
// produce shapes or constants (Shape, Size, ConstantOfShape, Constant, Range, EyeLike).
#include <algorithm>

#include "ir/schemas/shape_math.h"
#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

void copy_all(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  if (y.numel() != x.numel()) kfail(ctx, "output has ", y.numel(), " elements, input ", x.numel());
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t r = x.rank();
  std::vector<int64_t> perm = ctx.node.attr_ints("perm", {});
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> xs = contiguous_strides(x.shape()), st(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) st[size_t(i)] = xs[size_t(axis_of(ctx, perm[size_t(i)], r))];
  strided_gather(x, 0, st, y);
}

// Concat and Split: the tensor is [outer, axis, inner]; blocks of axis*inner move together.
void concat_kernel(KernelContext& ctx) {
  Tensor& y = out(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), y.rank());
  const size_t es = dtype_size(y.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.dim(int(d));
  for (int64_t d = axis + 1; d < y.rank(); ++d) inner *= y.dim(int(d));
  std::byte* py = static_cast<std::byte*>(y.raw());
  const size_t out_row = size_t(y.dim(int(axis)) * inner) * es;
  size_t col = 0;
  for (size_t j = 0; j < ctx.inputs.size(); ++j) {
    const Tensor& x = in(ctx, j);
    const size_t row = size_t(x.dim(int(axis)) * inner) * es;
    const std::byte* px = static_cast<const std::byte*>(x.raw());
    for (int64_t o = 0; o < outer && row; ++o)  // memmove: the planner may have put x on its slice of y
      std::memmove(py + size_t(o) * out_row + col, px + size_t(o) * row, row);
    col += row;
  }
}

void split_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), x.rank());
  const size_t es = dtype_size(x.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  const std::byte* px = static_cast<const std::byte*>(x.raw());
  const size_t in_row = size_t(x.dim(int(axis)) * inner) * es;
  size_t col = 0;
  for (size_t k = 0; k < ctx.outputs.size(); ++k) {
    Tensor& y = out(ctx, k);
    const size_t row = size_t(y.dim(int(axis)) * inner) * es;
    std::byte* py = static_cast<std::byte*>(y.raw());
    for (int64_t o = 0; o < outer && row; ++o)  // memmove: the planner may have made y a slice of x
      std::memmove(py + size_t(o) * row, px + size_t(o) * in_row + col, row);
    col += row;
  }
}

// The memory planner puts a Slice that is one contiguous run of its input on the input's bytes
// (compiler/memory_planner.cpp): the output then already holds the elements.
bool already_in_place(const Tensor& x, int64_t base, const std::vector<int64_t>& st, const Tensor& y) {
  if (static_cast<const std::byte*>(x.raw()) + base * int64_t(dtype_size(x.dtype())) != y.raw()) return false;
  const std::vector<int64_t> ys = contiguous_strides(y.shape());
  for (size_t d = 0; d < st.size(); ++d)
    if (y.dim(int(d)) > 1 && st[d] != ys[d]) return false;
  return true;
}

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  std::vector<int64_t> starts, ends, axes, steps;
  bool has_axes = false, has_steps = false;
  if (ctx.inputs.size() == 1) {
    starts = ctx.node.attr_ints("starts");
    ends = ctx.node.attr_ints("ends");
    has_axes = ctx.node.has_attr("axes");
    axes = ctx.node.attr_ints("axes");
  } else {
    starts = ints_of(ctx, in(ctx, 1));
    ends = ints_of(ctx, in(ctx, 2));
    if ((has_axes = has_in(ctx, 3))) axes = ints_of(ctx, in(ctx, 3));
    if ((has_steps = has_in(ctx, 4))) steps = ints_of(ctx, in(ctx, 4));
  }
  auto plan = ir::shape_math::slice_plan(ctx.node, x.shape(), starts, ends, has_axes ? &axes : nullptr,
                                         has_steps ? &steps : nullptr);
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t base = 0;
  std::vector<int64_t> st(plan.size());
  for (size_t d = 0; d < plan.size(); ++d) {
    base += plan[d].start * xs[d];
    st[d] = plan[d].step * xs[d];
  }
  if (already_in_place(x, base, st, y)) return;
  strided_gather(x, base, st, y);
}

void gather_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  std::vector<int64_t> idx = ints_of(ctx, in(ctx, 1));
  Tensor& y = out(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), x.rank());
  const int64_t dim = x.dim(int(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  const size_t block = size_t(inner) * dtype_size(x.dtype());
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim) kfail(ctx, "index ", i, " is out of range for axis size ", dim);
    if (i < 0) i += dim;
  }
  const std::byte* px = static_cast<const std::byte*>(x.raw());
  std::byte* py = static_cast<std::byte*>(y.raw());
  const size_t n = idx.size();
  for (int64_t o = 0; o < outer && block; ++o)
    for (size_t k = 0; k < n; ++k)
      std::memcpy(py + (size_t(o) * n + k) * block, px + (size_t(o) * size_t(dim) + size_t(idx[k])) * block, block);
}

void expand_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  strided_gather(x, 0, broadcast_strides(x.shape(), y.shape()), y);
}

void tile_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  for_each_index(y.shape(), [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % x.shape()[d]) * xs[d];
    copy_elem(x, off, y, o);
  });
}

void shape_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t r = x.rank();
  int64_t start = ctx.node.attr_int("start", 0);
  if (start < 0) start += r;
  start = std::clamp<int64_t>(start, 0, r);
  for (int64_t i = 0; i < y.numel(); ++i) y.data<int64_t>()[i] = x.shape()[size_t(start + i)];
}

void constant_of_shape_kernel(KernelContext& ctx) {
  Tensor& y = out(ctx, 0);
  const Tensor* v = ctx.node.has_attr("value") ? ctx.node.attr_tensor("value") : nullptr;
  if (!v) return;  // zero-filled f32 already
  const size_t es = dtype_size(y.dtype());
  std::byte* py = static_cast<std::byte*>(y.raw());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(py + size_t(i) * es, v->raw(), es);
}

void constant_kernel(KernelContext& ctx) {
  Tensor& y = out(ctx, 0);
  const ir::Node& n = ctx.node;
  if (const Tensor* v = n.has_attr("value") ? n.attr_tensor("value") : nullptr) {
    if (v->nbytes()) std::memcpy(y.raw(), v->raw(), v->nbytes());
  } else if (n.has_attr("value_float")) {
    y.data<float>()[0] = n.attr_float("value_float", 0);
  } else if (n.has_attr("value_int")) {
    y.data<int64_t>()[0] = n.attr_int("value_int", 0);
  } else if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    std::copy(v.begin(), v.end(), y.data<float>());
  } else if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    std::copy(v.begin(), v.end(), y.data<int64_t>());
  }
}

void range_kernel(KernelContext& ctx) {
  Tensor& y = out(ctx, 0);
  dispatch_numeric(ctx, y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T start = in(ctx, 0).data<T>()[0], delta = in(ctx, 2).data<T>()[0];
    T* py = y.data<T>();
    // Element i is start + i * delta (ONNX's definition), not a running sum.
    for (int64_t i = 0; i < y.numel(); ++i) {
      if constexpr (std::is_floating_point_v<T>)
        py[i] = T(double(start) + double(i) * double(delta));
      else
        py[i] = T(uint64_t(start) + uint64_t(i) * uint64_t(delta));
    }
  });
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const std::string mode = ctx.node.attr_string("mode", "constant");
  std::vector<int64_t> pads = has_in(ctx, 1) ? ints_of(ctx, in(ctx, 1)) : ctx.node.attr_ints("pads");
  const size_t r = size_t(x.rank());
  const size_t es = dtype_size(x.dtype());
  std::vector<std::byte> fill(es, std::byte{0});
  if (has_in(ctx, 2) && in(ctx, 2).numel() > 0)
    std::memcpy(fill.data(), in(ctx, 2).raw(), es);
  else if (ctx.node.has_attr("value") && x.dtype() == DType::f32) {
    float v = ctx.node.attr_float("value", 0);
    std::memcpy(fill.data(), &v, 4);
  }
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  std::byte* py = static_cast<std::byte*>(y.raw());
  for_each_index(y.shape(), [&](const std::vector<int64_t>& idx, int64_t o) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t i = idx[d] - pads[d];
      const int64_t n = x.shape()[d];
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          std::memcpy(py + size_t(o) * es, fill.data(), es);
          return;
        }
        if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else {  // reflect (mirror without repeating the edge)
          const int64_t period = 2 * (n - 1);
          if (period == 0)
            i = 0;
          else {
            i = ((i % period) + period) % period;
            if (i >= n) i = period - i;
          }
        }
      }
      off += i * xs[d];
    }
    copy_elem(x, off, y, o);
  });
}

void depth_space_kernel(KernelContext& ctx, bool to_space) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  const int64_t b = ctx.node.attr_int("blocksize", 1);
  const bool crd = ctx.node.attr_string("mode", "DCR") == "CRD";
  // Walk the depth-layout tensor [N, C*b*b, H, W] and the space-layout one [N, C, H*b, W*b].
  const Tensor& deep = to_space ? x : y;
  const int64_t N = deep.dim(0), C = deep.dim(1) / (b * b), H = deep.dim(2), W = deep.dim(3);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < b; ++j)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) {
              // DCR: depth channel = (i*b + j)*C + c; CRD (and SpaceToDepth's order is DCR): c*b*b + i*b + j.
              const int64_t dc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
              const int64_t d_off = ((n * C * b * b + dc) * H + h) * W + w;
              const int64_t s_off = ((n * C + c) * H * b + (h * b + i)) * W * b + (w * b + j);
              if (to_space)
                copy_elem(x, d_off, y, s_off);
              else
                copy_elem(x, s_off, y, d_off);
            }
}

void eye_like_kernel(KernelContext& ctx) {
  Tensor& y = out(ctx, 0);
  const int64_t k = ctx.node.attr_int("k", 0);
  const int64_t rows = y.dim(0), cols = y.dim(1);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < cols) y.set_from_double(i * cols + j, 1.0);
  }
}

}  // namespace

void register_shape_reference() {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) reg_bytes(op, copy_all);
  reg_bytes("Transpose", transpose_kernel);
  reg_bytes("Concat", concat_kernel);
  reg_bytes("Split", split_kernel);
  reg_bytes("Slice", slice_kernel);
  reg_bytes("Gather", gather_kernel);
  reg_bytes("Expand", expand_kernel);
  reg_bytes("Tile", tile_kernel);
  reg_bytes("Shape", shape_kernel);
  reg_bytes("Size", [](KernelContext& ctx) { out(ctx, 0).data<int64_t>()[0] = in(ctx, 0).numel(); });
  reg_bytes("ConstantOfShape", constant_of_shape_kernel);
  reg_bytes("Constant", constant_kernel);
  reg_bytes("Range", range_kernel);
  reg_bytes("Pad", pad_kernel);
  reg_bytes("DepthToSpace", [](KernelContext& ctx) { depth_space_kernel(ctx, true); });
  reg_bytes("SpaceToDepth", [](KernelContext& ctx) { depth_space_kernel(ctx, false); });
  reg_bytes("EyeLike", eye_like_kernel);
}

}  // namespace segmux::ref
