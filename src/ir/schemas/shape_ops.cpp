// Schemas of data-movement and shape ops: Reshape, Transpose, Concat, Split, Slice, Gather*, Scatter*,
// (Un)Squeeze, Expand, Tile, Shape, Size, ConstantOfShape, Constant, Range, Flatten, Pad, TopK, ...
// Where an output shape depends on input data (Reshape's shape, Slice's starts, ...) the data must be
// a known constant; otherwise the output shape is left unknown (has_shape = false).
#include <algorithm>
#include <cmath>

#include "ir/schemas/schema_util.h"
#include "ir/schemas/schemas.h"
#include "ir/schemas/shape_math.h"

namespace segmux::ir {
using namespace schema_util;

namespace {

void reg(const std::string& op, int min_in, int max_in, InferFn fn, int min_out = 1, int max_out = 1) {
  register_schema(OpSchema{op, "", min_in, max_in, min_out, max_out, std::move(fn)});
}

const TensorType& x0(InferContext& ctx) { return ctx.in(0); }

// Integer list from input i, or (for older opsets) from attribute `attr`; nullopt when unknown.
std::optional<std::vector<int64_t>> ints_input_or_attr(InferContext& ctx, size_t i, const char* attr) {
  if (ctx.has_input(i)) {
    require_int(ctx, i);
    return const_ints(ctx, i);
  }
  if (ctx.node.has_attr(attr)) return ctx.node.attr_ints(attr);
  return std::vector<int64_t>{};
}

void infer_reshape(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_dtype(ctx, 1, {DType::i64}, "i64");
  auto shape = const_ints(ctx, 1);
  bool allowzero = ctx.node.attr_int("allowzero", 0) != 0;
  if (!shape) return set_out_unknown(ctx, 0, x.dtype);
  if (x.has_shape) return set_out(ctx, 0, x.dtype, shape_math::reshape_target(ctx.node, x.shape, *shape, allowzero));
  bool plain = std::all_of(shape->begin(), shape->end(), [&](int64_t d) { return d > 0 || (d == 0 && allowzero); });
  if (plain) return set_out(ctx, 0, x.dtype, *shape);
  set_out_unknown(ctx, 0, x.dtype);
}

void infer_transpose(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t r = int64_t(x.shape.size());
  std::vector<int64_t> perm = ctx.node.attr_ints("perm", {});
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (int64_t(perm.size()) != r)
    ctx.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<char> seen(size_t(r), 0);
  Shape out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    int64_t p = norm_axis(ctx, perm[size_t(i)], r, "perm entry");
    if (seen[size_t(p)]) ctx.error("perm is not a permutation");
    seen[size_t(p)] = 1;
    out[size_t(i)] = x.shape[size_t(p)];
  }
  set_out(ctx, 0, x.dtype, out);
}

void infer_concat(InferContext& ctx) {
  if (!ctx.node.has_attr("axis")) ctx.error("attribute 'axis' is missing");
  DType t = ctx.in(0).dtype;
  Shape out;
  bool known = true, first = true;
  int64_t axis = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorType& x = ctx.in(i);
    if (x.dtype != t) ctx.error("inputs have different dtypes");
    if (!x.has_shape) {
      known = false;
      continue;
    }
    if (first) {
      out = x.shape;
      axis = norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(out.size()));
      first = false;
      continue;
    }
    if (x.shape.size() != out.size()) ctx.error("inputs have different ranks");
    for (size_t d = 0; d < out.size(); ++d) {
      if (int64_t(d) == axis)
        out[d] += x.shape[d];
      else if (out[d] != x.shape[d])
        ctx.error("input " + std::to_string(i) + " shape " + shape_str(x.shape) + " differs off the concat axis");
    }
  }
  if (!known) return set_out_unknown(ctx, 0, t);
  set_out(ctx, 0, t, out);
}

void infer_split(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  const size_t n = ctx.outputs.size();
  for (size_t k = 0; k < n; ++k) set_out_unknown(ctx, k, x.dtype);
  auto split = ints_input_or_attr(ctx, 1, "split");
  if (!x.has_shape || !split) return;
  const int64_t axis = norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(x.shape.size()));
  const int64_t dim = x.shape[size_t(axis)];
  std::vector<int64_t> parts = *split;
  if (parts.empty()) {
    if (dim % int64_t(n) != 0)
      ctx.error("axis size " + std::to_string(dim) + " does not split evenly into " + std::to_string(n) + " outputs");
    parts.assign(n, dim / int64_t(n));
  }
  if (parts.size() != n)
    ctx.error("split has " + std::to_string(parts.size()) + " sizes for " + std::to_string(n) + " outputs");
  int64_t sum = 0;
  for (int64_t p : parts) {
    if (p < 0) ctx.error("negative split size");
    sum += p;
  }
  if (sum != dim) ctx.error("split sizes sum to " + std::to_string(sum) + ", axis size is " + std::to_string(dim));
  for (size_t k = 0; k < n; ++k) {
    Shape s = x.shape;
    s[size_t(axis)] = parts[k];
    set_out(ctx, k, x.dtype, s);
  }
}

void infer_slice(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (ctx.inputs.size() == 1) {  // opset 1..9: attributes
    starts = ctx.node.attr_ints("starts");
    ends = ctx.node.attr_ints("ends");
    if (ctx.node.has_attr("axes")) axes = ctx.node.attr_ints("axes");
  } else {
    if (ctx.inputs.size() < 3) ctx.error("needs data, starts and ends");
    for (size_t i = 1; i < 5; ++i)
      if (ctx.has_input(i)) require_int(ctx, i);
    starts = const_ints(ctx, 1);
    ends = const_ints(ctx, 2);
    if (ctx.has_input(3)) {
      axes = const_ints(ctx, 3);
      if (!axes) return set_out_unknown(ctx, 0, x.dtype);
    }
    if (ctx.has_input(4)) {
      steps = const_ints(ctx, 4);
      if (!steps) return set_out_unknown(ctx, 0, x.dtype);
    }
  }
  if (!x.has_shape || !starts || !ends) return set_out_unknown(ctx, 0, x.dtype);
  auto plan =
      shape_math::slice_plan(ctx.node, x.shape, *starts, *ends, axes ? &*axes : nullptr, steps ? &*steps : nullptr);
  Shape out;
  for (auto& a : plan) out.push_back(a.len);
  set_out(ctx, 0, x.dtype, out);
}

void infer_gather(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_int(ctx, 1);
  const TensorType& idx = ctx.in(1);
  if (!x.has_shape || !idx.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t axis = norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(x.shape.size()));
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  set_out(ctx, 0, x.dtype, out);
}

void infer_gather_elements(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_int(ctx, 1);
  const TensorType& idx = ctx.in(1);
  if (!x.has_shape || !idx.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  if (x.shape.size() != idx.shape.size()) ctx.error("data and indices must have the same rank");
  norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(x.shape.size()));
  set_out(ctx, 0, x.dtype, idx.shape);
}

void infer_gather_nd(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_dtype(ctx, 1, {DType::i64}, "i64");
  const TensorType& idx = ctx.in(1);
  if (!x.has_shape || !idx.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  if (idx.shape.empty()) ctx.error("indices must have rank >= 1");
  const int64_t last = idx.shape.back();
  if (b < 0 || b >= int64_t(std::min(x.shape.size(), idx.shape.size())))
    ctx.error("batch_dims " + std::to_string(b) + " is out of range");
  if (last < 1 || b + last > int64_t(x.shape.size()))
    ctx.error("indices last dimension " + std::to_string(last) + " is out of range");
  for (int64_t i = 0; i < b; ++i)
    if (x.shape[size_t(i)] != idx.shape[size_t(i)]) ctx.error("batch dimensions of data and indices differ");
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + last, x.shape.end());
  set_out(ctx, 0, x.dtype, out);
}

void infer_unsqueeze(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  auto axes = ints_input_or_attr(ctx, 1, "axes");
  if (!x.has_shape || !axes) return set_out_unknown(ctx, 0, x.dtype);
  if (axes->empty()) ctx.error("axes is empty");
  const int64_t r = int64_t(x.shape.size() + axes->size());
  std::vector<char> is_new(size_t(r), 0);
  for (int64_t a : *axes) {
    int64_t k = norm_axis(ctx, a, r);
    if (is_new[size_t(k)]) ctx.error("axes has a duplicate");
    is_new[size_t(k)] = 1;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(is_new[size_t(i)] ? 1 : x.shape[j++]);
  set_out(ctx, 0, x.dtype, out);
}

void infer_squeeze(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  auto axes = ints_input_or_attr(ctx, 1, "axes");
  if (!x.has_shape || !axes) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t r = int64_t(x.shape.size());
  std::vector<char> drop(size_t(r), 0);
  if (axes->empty()) {
    for (int64_t i = 0; i < r; ++i) drop[size_t(i)] = x.shape[size_t(i)] == 1;
  } else {
    for (int64_t a : *axes) {
      int64_t k = norm_axis(ctx, a, r);
      if (x.shape[size_t(k)] != 1)
        ctx.error("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape[size_t(k)]));
      drop[size_t(k)] = 1;
    }
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[size_t(i)]) out.push_back(x.shape[size_t(i)]);
  set_out(ctx, 0, x.dtype, out);
}

void infer_expand(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_dtype(ctx, 1, {DType::i64}, "i64");
  auto shape = const_ints(ctx, 1);
  if (!x.has_shape || !shape) return set_out_unknown(ctx, 0, x.dtype);
  Shape out = broadcast(ctx, x.shape, *shape);
  check_buildable(ctx, out);
  set_out(ctx, 0, x.dtype, out);
}

void infer_tile(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_dtype(ctx, 1, {DType::i64}, "i64");
  auto reps = const_ints(ctx, 1);
  if (!x.has_shape || !reps) return set_out_unknown(ctx, 0, x.dtype);
  if (reps->size() != x.shape.size())
    ctx.error("repeats has " + std::to_string(reps->size()) + " values for rank " + std::to_string(x.shape.size()));
  Shape out = x.shape;
  for (size_t i = 0; i < out.size(); ++i) {
    if ((*reps)[i] < 0) ctx.error("negative repeat");
    if ((*reps)[i] > 0 && out[i] > (int64_t(1) << 48) / (*reps)[i]) ctx.error("repeats make the output too large");
    out[i] *= (*reps)[i];
  }
  check_buildable(ctx, out);
  set_out(ctx, 0, x.dtype, out);
}

void infer_shape(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  if (!x.has_shape) return set_out_unknown(ctx, 0, DType::i64);
  const int64_t r = int64_t(x.shape.size());
  int64_t start = ctx.node.attr_int("start", 0), end = ctx.node.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  set_out(ctx, 0, DType::i64, {std::max<int64_t>(0, end - start)});
}

DType constant_of_shape_dtype(const Node& n) {
  const Tensor* v = n.has_attr("value") ? n.attr_tensor("value") : nullptr;
  if (v) SEGMUX_CHECK(v->numel() == 1, n.describe(), ": 'value' must hold exactly one element");
  return v ? v->dtype() : DType::f32;
}

void infer_constant_of_shape(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::i64}, "i64");
  DType t = constant_of_shape_dtype(ctx.node);
  auto shape = const_ints(ctx, 0);
  if (!shape) {
    if (ctx.in(0).has_shape && ctx.in(0).shape.size() == 1 && ctx.in(0).shape[0] == 0) return set_out(ctx, 0, t, {});
    return set_out_unknown(ctx, 0, t);
  }
  check_buildable(ctx, *shape);
  set_out(ctx, 0, t, *shape);
}

void infer_constant(InferContext& ctx) {
  const Node& n = ctx.node;
  if (const Tensor* v = n.has_attr("value") ? n.attr_tensor("value") : nullptr)
    return set_out(ctx, 0, v->dtype(), v->shape());
  if (n.has_attr("value_float")) return set_out(ctx, 0, DType::f32, {});
  if (n.has_attr("value_int")) return set_out(ctx, 0, DType::i64, {});
  if (n.has_attr("value_floats")) return set_out(ctx, 0, DType::f32, {int64_t(n.attr_floats("value_floats").size())});
  if (n.has_attr("value_ints")) return set_out(ctx, 0, DType::i64, {int64_t(n.attr_ints("value_ints").size())});
  ctx.error("needs one of the attributes value, value_float(s), value_int(s)");
}

void infer_range(InferContext& ctx) {
  DType t = ctx.in(0).dtype;
  require_dtype(ctx, 0, {DType::f32, DType::f64, DType::i64, DType::i32}, "f32, f64, i64 or i32");
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.in(i).dtype != t) ctx.error("start, limit and delta must share one dtype");
    if (ctx.in(i).has_shape && shape_numel(ctx.in(i).shape) != 1) ctx.error("start, limit and delta must be scalars");
  }
  auto a = const_doubles(ctx, 0), b = const_doubles(ctx, 1), c = const_doubles(ctx, 2);
  if (!a || !b || !c) return set_out_unknown(ctx, 0, t);
  double start = (*a)[0], limit = (*b)[0], delta = (*c)[0];
  if (delta == 0) ctx.error("delta is zero");
  int64_t n;
  if (t == DType::i64 || t == DType::i32) {
    auto ia = const_ints(ctx, 0), ib = const_ints(ctx, 1), ic = const_ints(ctx, 2);
    int64_t d = (*ic)[0], span = (*ib)[0] - (*ia)[0];
    n = d > 0 ? (span > 0 ? (span + d - 1) / d : 0) : (span < 0 ? (-span + (-d) - 1) / (-d) : 0);
  } else {
    const double len = std::max(0.0, std::ceil((limit - start) / delta));
    if (!(len < double(int64_t(1) << 48))) ctx.error("Range would have too many elements");
    n = int64_t(len);
  }
  check_buildable(ctx, {n});
  set_out(ctx, 0, t, {n});
}

void infer_flatten(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t r = int64_t(x.shape.size());
  int64_t axis = ctx.node.attr_int("axis", 1);
  if (axis < -r || axis > r)
    ctx.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= x.shape[size_t(i)];
  set_out(ctx, 0, x.dtype, {a, b});
}

void infer_pad(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  const std::string mode = ctx.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") ctx.error("unknown mode '" + mode + "'");
  if (ctx.has_input(2) && ctx.in(2).dtype != x.dtype) ctx.error("constant_value must have the data's dtype");
  if (ctx.has_input(3)) ctx.error("the 'axes' input (opset 18) is not supported");
  auto pads = ints_input_or_attr(ctx, 1, "pads");
  if (!x.has_shape || !pads) return set_out_unknown(ctx, 0, x.dtype);
  const size_t r = x.shape.size();
  if (pads->size() != 2 * r)
    ctx.error("pads has " + std::to_string(pads->size()) + " values for rank " + std::to_string(r));
  Shape out = x.shape;
  for (size_t i = 0; i < r; ++i) {
    out[i] += (*pads)[i] + (*pads)[i + r];
    if (out[i] < 0) ctx.error("pads make axis " + std::to_string(i) + " negative");
    if (mode == "reflect" && ((*pads)[i] >= x.shape[i] || (*pads)[i + r] >= x.shape[i]) &&
        ((*pads)[i] > 0 || (*pads)[i + r] > 0))
      ctx.error("reflect pads must be smaller than the axis size");
    if (mode == "edge" && x.shape[i] == 0 && out[i] > 0) ctx.error("edge padding of an empty axis");
  }
  set_out(ctx, 0, x.dtype, out);
}

void infer_depth_to_space(InferContext& ctx, bool to_space) {
  const TensorType& x = x0(ctx);
  const int64_t b = ctx.node.attr_int("blocksize", 0);
  if (b <= 0) ctx.error("blocksize must be positive");
  if (!to_space) {
    // SpaceToDepth has no mode.
  } else {
    std::string mode = ctx.node.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") ctx.error("unknown mode '" + mode + "'");
  }
  if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  if (x.shape.size() != 4) ctx.error("input must be 4-D");
  Shape s = x.shape;
  if (to_space) {
    if (s[1] % (b * b) != 0) ctx.error("channels not divisible by blocksize^2");
    s = {s[0], s[1] / (b * b), s[2] * b, s[3] * b};
  } else {
    if (s[2] % b != 0 || s[3] % b != 0) ctx.error("height/width not divisible by blocksize");
    s = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
  }
  set_out(ctx, 0, x.dtype, s);
}

void infer_onehot(InferContext& ctx) {
  const TensorType& idx = x0(ctx);
  const TensorType& values = ctx.in(2);
  if (values.has_shape && shape_numel(values.shape) != 2) ctx.error("values must hold [off, on]");
  auto depth = const_doubles(ctx, 1);
  if (!idx.has_shape || !depth) return set_out_unknown(ctx, 0, values.dtype);
  if (depth->size() != 1) ctx.error("depth must be a scalar");
  const int64_t d = int64_t((*depth)[0]);
  if (d < 1) ctx.error("depth must be positive");
  const int64_t r = int64_t(idx.shape.size()) + 1;
  int64_t axis = ctx.node.attr_int("axis", -1);
  axis = norm_axis(ctx, axis, r);
  Shape out = idx.shape;
  out.insert(out.begin() + axis, d);
  set_out(ctx, 0, values.dtype, out);
}

void infer_scatter(InferContext& ctx, bool nd) {
  const TensorType& x = x0(ctx);
  if (nd)
    require_dtype(ctx, 1, {DType::i64}, "i64");
  else
    require_int(ctx, 1);
  if (ctx.in(2).dtype != x.dtype) ctx.error("updates must have the data's dtype");
  const std::string red = ctx.node.attr_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    ctx.error("unknown reduction '" + red + "'");
  if (!nd && ctx.in(1).has_shape && ctx.in(2).has_shape && ctx.in(1).shape != ctx.in(2).shape)
    ctx.error("indices and updates must have the same shape");
  if (!nd && x.has_shape) {
    if (ctx.in(1).has_shape && ctx.in(1).shape.size() != x.shape.size()) ctx.error("indices must have the data's rank");
    norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(x.shape.size()));
  }
  if (nd && x.has_shape && ctx.in(1).has_shape && ctx.in(2).has_shape) {
    const Shape& is = ctx.in(1).shape;
    if (is.empty()) ctx.error("indices must have rank >= 1");
    const int64_t k = is.back();
    if (k > int64_t(x.shape.size())) ctx.error("indices last dimension exceeds the data rank");
    Shape expect(is.begin(), is.end() - 1);
    expect.insert(expect.end(), x.shape.begin() + k, x.shape.end());
    if (expect != ctx.in(2).shape)
      ctx.error("updates shape " + shape_str(ctx.in(2).shape) + " should be " + shape_str(expect));
  }
  ctx.outputs[0] = x;
}

void infer_topk(InferContext& ctx) {
  const TensorType& x = x0(ctx);
  require_dtype(ctx, 1, {DType::i64}, "i64");
  auto k = const_ints(ctx, 1);
  set_out_unknown(ctx, 0, x.dtype);
  set_out_unknown(ctx, 1, DType::i64);
  if (!x.has_shape || !k) return;
  if (k->size() != 1) ctx.error("K must hold one value");
  const int64_t axis = norm_axis(ctx, ctx.node.attr_int("axis", -1), int64_t(x.shape.size()));
  if ((*k)[0] < 0 || (*k)[0] > x.shape[size_t(axis)])
    ctx.error("K=" + std::to_string((*k)[0]) + " is out of range for axis size " +
              std::to_string(x.shape[size_t(axis)]));
  Shape s = x.shape;
  s[size_t(axis)] = (*k)[0];
  set_out(ctx, 0, x.dtype, s);
  set_out(ctx, 1, DType::i64, s);
}

}  // namespace

void register_shape_schemas() {
  reg("Reshape", 2, 2, infer_reshape);
  reg("Transpose", 1, 1, infer_transpose);
  reg("Concat", 1, 1 << 20, infer_concat);
  reg("Split", 1, 2, infer_split, 1, 1 << 20);
  reg("Slice", 1, 5, infer_slice);
  reg("Gather", 2, 2, infer_gather);
  reg("GatherElements", 2, 2, infer_gather_elements);
  reg("GatherND", 2, 2, infer_gather_nd);
  reg("Unsqueeze", 1, 2, infer_unsqueeze);
  reg("Squeeze", 1, 2, infer_squeeze);
  reg("Expand", 2, 2, infer_expand);
  reg("Tile", 2, 2, infer_tile);
  reg("Shape", 1, 1, infer_shape);
  reg("Size", 1, 1, [](InferContext& ctx) { set_out(ctx, 0, DType::i64, {}); });
  reg("ConstantOfShape", 1, 1, infer_constant_of_shape);
  reg("Constant", 0, 0, infer_constant);
  reg("Range", 3, 3, infer_range);
  reg("Flatten", 1, 1, infer_flatten);
  reg("Pad", 1, 4, infer_pad);
  reg("DepthToSpace", 1, 1, [](InferContext& ctx) { infer_depth_to_space(ctx, true); });
  reg("SpaceToDepth", 1, 1, [](InferContext& ctx) { infer_depth_to_space(ctx, false); });
  reg("Trilu", 1, 2, [](InferContext& ctx) {
    if (ctx.in(0).has_shape && ctx.in(0).shape.size() < 2) ctx.error("input must have rank >= 2");
    if (ctx.has_input(1)) require_dtype(ctx, 1, {DType::i64}, "i64");
    ctx.outputs[0] = ctx.in(0);
  });
  reg("OneHot", 3, 3, infer_onehot);
  reg("NonZero", 1, 1, [](InferContext& ctx) {
    if (!ctx.in(0).has_shape) return set_out_unknown(ctx, 0, DType::i64);
    set_out(ctx, 0, DType::i64, {int64_t(ctx.in(0).shape.size()), -1});
  });
  reg("ScatterElements", 3, 3, [](InferContext& ctx) { infer_scatter(ctx, false); });
  reg("ScatterND", 3, 3, [](InferContext& ctx) { infer_scatter(ctx, true); });
  reg("TopK", 2, 2, infer_topk, 2, 2);
  reg("CumSum", 2, 2, [](InferContext& ctx) {
    require_int(ctx, 1);
    if (ctx.in(1).has_shape && shape_numel(ctx.in(1).shape) != 1) ctx.error("axis must be a scalar");
    if (ctx.in(0).has_shape) {
      if (auto axis = const_int(ctx, 1)) norm_axis(ctx, *axis, int64_t(ctx.in(0).shape.size()));
    }
    ctx.outputs[0] = ctx.in(0);
  });
  reg("EyeLike", 1, 1, [](InferContext& ctx) {
    DType t = ctx.in(0).dtype;
    if (ctx.node.has_attr("dtype") && !dtype_from_onnx(ctx.node.attr_int("dtype", 1), &t))
      ctx.error("unsupported dtype");
    if (ctx.in(0).has_shape && ctx.in(0).shape.size() != 2) ctx.error("input must be 2-D");
    ctx.outputs[0] = TensorType{t, ctx.in(0).shape, ctx.in(0).has_shape};
  });
  reg("Compress", 2, 2, [](InferContext& ctx) {
    const TensorType& x = x0(ctx);
    require_dtype(ctx, 1, {DType::boolean}, "bool");
    if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
    if (!ctx.node.has_attr("axis")) return set_out(ctx, 0, x.dtype, {-1});
    Shape s = x.shape;
    s[size_t(norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(s.size())))] = -1;
    set_out(ctx, 0, x.dtype, s);
  });
  reg("ReverseSequence", 2, 2, [](InferContext& ctx) {
    require_dtype(ctx, 1, {DType::i64}, "i64");
    ctx.outputs[0] = ctx.in(0);
  });
}

}  // namespace segmux::ir
