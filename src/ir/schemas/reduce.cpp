// Schemas of reductions (Reduce*, ArgMax/ArgMin), softmax-like ops and normalizations.
#include "ir/schemas/schema_util.h"
#include "ir/schemas/schemas.h"

namespace segmux::ir {
using namespace schema_util;

namespace {

void reg(const std::string& op, int min_in, int max_in, InferFn fn, int min_out = 1, int max_out = 1) {
  register_schema(OpSchema{op, "", min_in, max_in, min_out, max_out, std::move(fn)});
}

// Opset 17: ReduceSum takes axes as an optional input, the others as an attribute. Both forms are
// accepted for every Reduce* op (the other form is simply absent).
void infer_reduce(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, {DType::i64}, "i64");
    auto v = const_ints(ctx, 1);
    if (!v) return set_out_unknown(ctx, 0, x.dtype);
    axes = *v;
  } else {
    axes = ctx.node.attr_ints("axes", {});
  }
  if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
  const bool noop = ctx.node.attr_int("noop_with_empty_axes", 0) != 0;
  const int64_t r = int64_t(x.shape.size());
  std::vector<char> reduced(size_t(r), 0);
  if (axes.empty()) {
    if (noop) return set_out(ctx, 0, x.dtype, x.shape);
    std::fill(reduced.begin(), reduced.end(), 1);
  }
  for (int64_t a : axes) reduced[size_t(norm_axis(ctx, a, r))] = 1;
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    if (!reduced[size_t(i)])
      out.push_back(x.shape[size_t(i)]);
    else if (keep)
      out.push_back(1);
  }
  set_out(ctx, 0, x.dtype, out);
}

void infer_arg(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (!x.has_shape) return set_out_unknown(ctx, 0, DType::i64);
  const int64_t r = int64_t(x.shape.size());
  const int64_t axis = norm_axis(ctx, ctx.node.attr_int("axis", 0), r);
  if (x.shape[size_t(axis)] == 0) ctx.error("cannot take ArgMax/ArgMin over an empty axis");
  Shape out = x.shape;
  if (ctx.node.attr_int("keepdims", 1) != 0)
    out[size_t(axis)] = 1;
  else
    out.erase(out.begin() + axis);
  set_out(ctx, 0, DType::i64, out);
}

void infer_softmax(InferContext& ctx) {
  require_float(ctx, 0);
  const TensorType& x = ctx.in(0);
  if (x.has_shape) norm_axis(ctx, ctx.node.attr_int("axis", -1), int64_t(x.shape.size()));
  ctx.outputs[0] = x;
}

void infer_layer_norm(InferContext& ctx) {
  require_float(ctx, 0);
  const TensorType& x = ctx.in(0);
  if (ctx.in(1).dtype != x.dtype || (ctx.has_input(2) && ctx.in(2).dtype != x.dtype))
    ctx.error("Scale and B must have X's dtype");
  if (ctx.node.attr_int("stash_type", 1) != 1) ctx.error("only stash_type=1 (float) is supported");
  ctx.outputs[0] = x;
  for (size_t k = 1; k < ctx.outputs.size(); ++k) set_out_unknown(ctx, k, DType::f32);
  if (!x.has_shape) return;
  const int64_t r = int64_t(x.shape.size());
  const int64_t axis = norm_axis(ctx, ctx.node.attr_int("axis", -1), r);
  Shape norm(x.shape.begin() + axis, x.shape.end());
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i) || !ctx.in(i).has_shape) continue;
    const Shape& s = ctx.in(i).shape;
    if (s.size() > norm.size()) ctx.error("Scale/B rank exceeds the normalized rank");
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t target = norm[norm.size() - s.size() + d];
      if (s[d] != 1 && s[d] != target)
        ctx.error("Scale/B shape " + shape_str(s) + " does not broadcast to " + shape_str(norm));
    }
  }
  Shape stat = x.shape;
  for (int64_t i = axis; i < r; ++i) stat[size_t(i)] = 1;
  for (size_t k = 1; k < ctx.outputs.size(); ++k) set_out(ctx, k, DType::f32, stat);
}

void check_channel_param(InferContext& ctx, size_t i, int64_t channels) {
  if (!ctx.has_input(i)) return;
  if (ctx.in(i).dtype != ctx.in(0).dtype) ctx.error("parameter input " + std::to_string(i) + " must have X's dtype");
  if (ctx.in(i).has_shape && (ctx.in(i).shape.size() != 1 || ctx.in(i).shape[0] != channels))
    ctx.error("parameter input " + std::to_string(i) + " must have shape [" + std::to_string(channels) + "], got " +
              shape_str(ctx.in(i).shape));
}

void infer_instance_norm(InferContext& ctx) {
  require_float(ctx, 0);
  const TensorType& x = ctx.in(0);
  if (x.has_shape) {
    if (x.shape.size() < 2) ctx.error("input must have rank >= 2");
    for (size_t i = 1; i < 3; ++i) check_channel_param(ctx, i, x.shape[1]);
  }
  ctx.outputs[0] = x;
}

void infer_batch_norm(InferContext& ctx) {
  require_float(ctx, 0);
  const TensorType& x = ctx.in(0);
  if (ctx.node.attr_int("training_mode", 0) != 0) ctx.error("training_mode=1 is not supported (inference only)");
  if (ctx.outputs.size() > 1) ctx.error("running mean/var outputs exist only in training mode");
  if (x.has_shape) {
    if (x.shape.size() < 2) ctx.error("input must have rank >= 2");
    for (size_t i = 1; i < 5; ++i) check_channel_param(ctx, i, x.shape[1]);
  }
  ctx.outputs[0] = x;
}

}  // namespace

void register_reduce_schemas() {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    reg(op, 1, 2, infer_reduce);
  reg("ArgMax", 1, 1, infer_arg);
  reg("ArgMin", 1, 1, infer_arg);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax", "LpNormalization"}) reg(op, 1, 1, infer_softmax);
  reg("MeanVarianceNormalization", 1, 1, [](InferContext& ctx) {
    require_float(ctx, 0);
    ctx.outputs[0] = ctx.in(0);
  });
  reg("LayerNormalization", 2, 3, infer_layer_norm, 1, 3);
  reg("InstanceNormalization", 3, 3, infer_instance_norm);
  reg("BatchNormalization", 5, 5, infer_batch_norm, 1, 3);
}

}  // namespace segmux::ir
