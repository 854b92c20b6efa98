// Schemas of segmux's fused ops (domain "segmux"). They appear only after compiler fusion
// (src/compiler/passes/fuse_*), never in exported ONNX.
//
//   Linear(A [..., K], W [K, N], bias [N]?, residual?) -> [..., N]
//       y = act(A W + bias) + residual; attr activation = "" | "gelu" (exact erf) | "relu"; residual
//       broadcasts to the output. y has W's dtype, or bf16 with attr bf16_output = 1 (ir/precision.h);
//       A may be bf16 with an f32 W (the bf16 activations between two Linears of a bf16 build).
//   Gelu(X) -> X's shape: 0.5 x (1 + erf(x / sqrt 2)); attrs bf16_round_input / bf16_round_output = 1
//       round x, resp. the result, to bf16 values first (what Cast(Cast(., bf16), f32) does).
//   GroupNorm(X [N, C, ...], scale [C], bias [C]) -> X's shape; attrs num_groups, epsilon (1e-5).
//   Attention(q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv], mask?) -> [..., Lq, Dv]
//       softmax(q k^T * scale + mask) v over the last axis; attr scale (default 1/sqrt(D)); q, k, v
//       share their leading (batch, head) dims; mask broadcasts to [..., Lq, Lk] and is f32 (added)
//       or bool (true = attend). Rows whose keys are all masked give zeros. Windowed attention is
//       expressed by reshaping windows into the leading dims.
//   Conv(X, W, B?) -> ONNX Conv (2-D, same attributes) where X is [N, H, W, C] if channels_last_in = 1
//       and the output [N, H', W', M] if channels_last_out = 1 (else NCHW): lets consecutive convs and
//       channel norms run without layout changes between them.
//   Rope(X [..., L, D], cos [L, D/2], sin [L, D/2]) -> X's shape: rotary embedding on interleaved
//       pairs: y[2i] = x[2i] cos_i - x[2i+1] sin_i, y[2i+1] = x[2i] sin_i + x[2i+1] cos_i (per row l);
//       cos/sin may carry extra size-1 dims (e.g. [L, D/2, 1]).
//   Attention's q, k, v and Rope's X may be read through strided views of larger inputs, and
//   Attention may write its output permuted (attributes of ir/strided_view.h).
//   Pointwise(X, operands...) -> X's shape: the element-wise ops of attr `steps` (ir/pointwise.h)
//       applied in order to X, each binary step taking the next operand, which broadcasts to X; f32.
//       Every step rounds to f32 as the unfused op does, so results are those of the chain.
#include "ir/pointwise.h"
#include "ir/precision.h"
#include "ir/schemas/schema_util.h"
#include "ir/schemas/schemas.h"
#include "ir/schemas/shape_math.h"
#include "ir/strided_view.h"

namespace segmux::ir {

namespace su = schema_util;

namespace {

void infer_linear(InferContext& ctx) {
  su::require_float(ctx, 0);
  su::require_float(ctx, 1);
  const DType t = ctx.node.attr_int(kLinearBf16Output, 0) != 0 ? DType::bf16 : ctx.in(1).dtype;
  const std::string act = ctx.node.attr_string("activation", "");
  if (!act.empty() && act != "gelu" && act != "relu")
    ctx.error("unknown activation '" + act + "' (expected \"\", \"gelu\" or \"relu\")");
  if (!su::shapes_known(ctx, {0, 1})) return su::set_out_unknown(ctx, 0, t);
  const Shape& a = ctx.in(0).shape;
  const Shape& w = ctx.in(1).shape;
  if (w.size() != 2) ctx.error("weight must be [K, N], got " + shape_str(w));
  if (a.empty() || a.back() != w[0]) ctx.error("input " + shape_str(a) + " does not end in K=" + std::to_string(w[0]));
  Shape out = a;
  out.back() = w[1];
  if (ctx.has_input(2) && ctx.in(2).has_shape && shape_numel(ctx.in(2).shape) != w[1])
    ctx.error("bias " + shape_str(ctx.in(2).shape) + " must have N=" + std::to_string(w[1]) + " values");
  if (ctx.has_input(3) && ctx.in(3).has_shape && su::broadcast(ctx, out, ctx.in(3).shape) != out)
    ctx.error("residual " + shape_str(ctx.in(3).shape) + " does not broadcast to " + shape_str(out));
  su::set_out(ctx, 0, t, out);
}

void infer_gelu(InferContext& ctx) {
  su::require_float(ctx, 0);
  if (!ctx.in(0).has_shape) return su::set_out_unknown(ctx, 0, ctx.in(0).dtype);
  su::set_out(ctx, 0, ctx.in(0).dtype, ctx.in(0).shape);
}

void infer_group_norm(InferContext& ctx) {
  su::require_float(ctx, 0);
  const int64_t groups = ctx.node.attr_int("num_groups", 0);
  if (groups < 1) ctx.error("num_groups must be >= 1");
  if (!ctx.in(0).has_shape) return su::set_out_unknown(ctx, 0, ctx.in(0).dtype);
  const Shape& x = ctx.in(0).shape;
  if (x.size() < 2) ctx.error("input must be [N, C, ...], got " + shape_str(x));
  if (x[1] >= 0 && x[1] % groups != 0)
    ctx.error(std::to_string(x[1]) + " channels do not split into " + std::to_string(groups) + " groups");
  for (size_t i : {size_t(1), size_t(2)})
    if (ctx.in(i).has_shape && shape_numel(ctx.in(i).shape) != x[1])
      ctx.error("scale and bias must have C=" + std::to_string(x[1]) + " values");
  su::set_out(ctx, 0, ctx.in(0).dtype, x);
}

// The shape the node reads input i as: its strided view's (ir/strided_view.h), checked against the
// input's size, or the input's own.
Shape logical_shape(InferContext& ctx, int i) {
  std::optional<StridedView> view;
  try {
    view = input_view(ctx.node, i);
  } catch (const std::exception& e) {
    ctx.error(e.what());
  }
  if (!view) return ctx.in(size_t(i)).shape;
  if (const std::string why = check_view(*view, shape_numel(ctx.in(size_t(i)).shape)); !why.empty())
    ctx.error("input " + std::to_string(i) + ": " + why);
  return view->shape;
}

void infer_attention(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) su::require_float(ctx, i);
  const DType t = ctx.in(0).dtype;
  if (!su::shapes_known(ctx, {0, 1, 2})) return su::set_out_unknown(ctx, 0, t);
  const Shape q = logical_shape(ctx, 0), k = logical_shape(ctx, 1), v = logical_shape(ctx, 2);
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
    ctx.error("q, k, v must have the same rank >= 2, got " + shape_str(q) + " " + shape_str(k) + " " + shape_str(v));
  for (size_t d = 0; d + 2 < q.size(); ++d)
    if (k[d] != q[d] || v[d] != q[d])
      ctx.error("leading dims of q, k, v differ: " + shape_str(q) + " " + shape_str(k) + " " + shape_str(v));
  const size_t r = q.size();
  if (k[r - 1] != q[r - 1]) ctx.error("q and k head sizes differ");
  if (v[r - 2] != k[r - 2]) ctx.error("k and v lengths differ");
  if (ctx.has_input(3) && ctx.in(3).has_shape) {
    su::require_dtype(ctx, 3, {DType::f32, DType::boolean}, "mask");
    Shape scores = q;
    scores[r - 1] = k[r - 2];
    if (su::broadcast(ctx, scores, ctx.in(3).shape) != scores)
      ctx.error("mask " + shape_str(ctx.in(3).shape) + " does not broadcast to the scores " + shape_str(scores));
  }
  Shape out = q;
  out[r - 1] = v[r - 1];
  if (ctx.node.has_attr(kOutputPerm)) {
    const std::vector<int64_t> perm = ctx.node.attr_ints(kOutputPerm);
    if (const std::string why = check_output_perm(perm, r); !why.empty()) ctx.error(why);
    const Shape logical = out;
    for (size_t d = 0; d < r; ++d) out[d] = logical[size_t(perm[d])];
  }
  su::set_out(ctx, 0, t, out);
}

void infer_rope(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) su::require_float(ctx, i);
  if (!su::shapes_known(ctx, {0})) return su::set_out_unknown(ctx, 0, ctx.in(0).dtype);
  const Shape x = logical_shape(ctx, 0);
  if (x.size() < 2 || x.back() % 2 != 0) ctx.error("input must be [..., L, D] with even D, got " + shape_str(x));
  const int64_t want = x[x.size() - 2] * (x.back() / 2);
  for (size_t i : {size_t(1), size_t(2)})
    if (ctx.in(i).has_shape && shape_numel(ctx.in(i).shape) != want)
      ctx.error("cos/sin must hold L x D/2 = " + std::to_string(want) + " values, got " + shape_str(ctx.in(i).shape));
  su::set_out(ctx, 0, ctx.in(0).dtype, x);
}

void infer_conv_channels_last(InferContext& ctx) {
  su::require_float(ctx, 0);
  const TensorType& x = ctx.in(0);
  const TensorType& w = ctx.in(1);
  if (w.dtype != x.dtype || (ctx.has_input(2) && ctx.in(2).dtype != x.dtype))
    ctx.error("X, W and B must share one dtype");
  if (!x.has_shape || !w.has_shape) return su::set_out_unknown(ctx, 0, x.dtype);
  if (x.shape.size() != 4 || w.shape.size() != 4) ctx.error("X and W must be 4-D");
  const bool last_in = ctx.node.attr_int("channels_last_in", 0) != 0;
  const bool last_out = ctx.node.attr_int("channels_last_out", 0) != 0;
  const Shape nchw = last_in ? Shape{x.shape[0], x.shape[3], x.shape[1], x.shape[2]} : x.shape;
  const int64_t g = ctx.node.attr_int("group", 1);
  if (g < 1 || nchw[1] != w.shape[1] * g || w.shape[0] % g != 0)
    ctx.error("X has " + std::to_string(nchw[1]) + " channels, W " + shape_str(w.shape) + " and group " +
              std::to_string(g) + " disagree");
  if (ctx.has_input(2) && ctx.in(2).has_shape && ctx.in(2).shape != Shape{w.shape[0]})
    ctx.error("B must have shape [M]");
  auto win = shape_math::conv_window(ctx.node, nchw, {w.shape[2], w.shape[3]}, false);
  Shape out = last_out ? Shape{nchw[0], win.out[0], win.out[1], w.shape[0]}
                       : Shape{nchw[0], w.shape[0], win.out[0], win.out[1]};
  su::set_out(ctx, 0, x.dtype, out);
}

void infer_pointwise(InferContext& ctx) {
  std::vector<PointwiseStep> steps;
  std::string error;
  if (!parse_pointwise_steps(ctx.node.attr_string(kPointwiseSteps, ""), &steps, &error)) ctx.error("steps: " + error);
  size_t operands = 0;
  for (const PointwiseStep& s : steps) operands += s.binary();
  if (ctx.node.inputs.size() != operands + 1)
    ctx.error(std::to_string(operands) + " binary steps need " + std::to_string(operands + 1) + " inputs, got " +
              std::to_string(ctx.node.inputs.size()));
  for (size_t i = 0; i <= operands; ++i) su::require_dtype(ctx, i, {DType::f32}, "input");
  if (!ctx.in(0).has_shape) return su::set_out_unknown(ctx, 0, DType::f32);
  const Shape& x = ctx.in(0).shape;
  for (size_t i = 1; i <= operands; ++i)
    if (ctx.in(i).has_shape && su::broadcast(ctx, x, ctx.in(i).shape) != x)
      ctx.error("operand " + shape_str(ctx.in(i).shape) + " does not broadcast to " + shape_str(x));
  su::set_out(ctx, 0, DType::f32, x);
}

}  // namespace

void register_segmux_schemas() {
  register_schema({"Conv", "segmux", 2, 3, 1, 1, infer_conv_channels_last});
  register_schema({"Rope", "segmux", 3, 3, 1, 1, infer_rope});
  register_schema({"Linear", "segmux", 2, 4, 1, 1, infer_linear});
  register_schema({"Gelu", "segmux", 1, 1, 1, 1, infer_gelu});
  register_schema({"GroupNorm", "segmux", 3, 3, 1, 1, infer_group_norm});
  register_schema({"Attention", "segmux", 3, 4, 1, 1, infer_attention});
  register_schema({"Pointwise", "segmux", 1, 64, 1, 1, infer_pointwise});
}

}  // namespace segmux::ir
