// Schemas of the "neural network" ops: MatMul, Gemm, Conv, ConvTranspose, pools, Resize, RoiAlign,
// Einsum, quantization helpers, GridSample, and our own segmux.ResizeAntialias.
#include "ir/schemas/schema_util.h"
#include "ir/schemas/schemas.h"
#include "ir/schemas/shape_math.h"

namespace segmux::ir {
using namespace schema_util;

namespace {

void reg(const std::string& op, int min_in, int max_in, InferFn fn, int min_out = 1, int max_out = 1,
         const std::string& domain = "") {
  register_schema(OpSchema{op, domain, min_in, max_in, min_out, max_out, std::move(fn)});
}

Shape matmul_shape(InferContext& ctx, Shape a, Shape b) {
  if (a.empty() || b.empty()) ctx.error("MatMul inputs must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2]) ctx.error("inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  Shape batch = broadcast(ctx, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!a_vec) batch.push_back(a[a.size() - 2]);
  if (!b_vec) batch.push_back(b.back());
  return batch;
}

void infer_matmul(InferContext& ctx) {
  const TensorType& a = ctx.in(0);
  const TensorType& b = ctx.in(1);
  if (a.dtype != b.dtype) ctx.error("A and B have different dtypes");
  if (a.dtype == DType::boolean) ctx.error("bool inputs are not supported");
  if (!a.has_shape || !b.has_shape) return set_out_unknown(ctx, 0, a.dtype);
  set_out(ctx, 0, a.dtype, matmul_shape(ctx, a.shape, b.shape));
}

void infer_gemm(InferContext& ctx) {
  const TensorType& a = ctx.in(0);
  const TensorType& b = ctx.in(1);
  if (a.dtype != b.dtype || (ctx.has_input(2) && ctx.in(2).dtype != a.dtype))
    ctx.error("A, B and C must share one dtype");
  if (!a.has_shape || !b.has_shape) return set_out_unknown(ctx, 0, a.dtype);
  if (a.shape.size() != 2 || b.shape.size() != 2) ctx.error("A and B must be 2-D");
  const bool ta = ctx.node.attr_int("transA", 0) != 0, tb = ctx.node.attr_int("transB", 0) != 0;
  const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const int64_t k2 = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != k2) ctx.error("inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  if (ctx.has_input(2) && ctx.in(2).has_shape && broadcast(ctx, ctx.in(2).shape, {m, n}) != Shape{m, n})
    ctx.error("C " + shape_str(ctx.in(2).shape) + " does not broadcast to [M, N]");
  set_out(ctx, 0, a.dtype, {m, n});
}

std::vector<int64_t> kernel_from(InferContext& ctx, const Shape& w) {
  std::vector<int64_t> k(w.begin() + 2, w.end());
  if (ctx.node.has_attr("kernel_shape") && ctx.node.attr_ints("kernel_shape") != k)
    ctx.error("kernel_shape attribute disagrees with the weight shape " + shape_str(w));
  return k;
}

void infer_conv(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const TensorType& w = ctx.in(1);
  require_float(ctx, 0);
  if (w.dtype != x.dtype || (ctx.has_input(2) && ctx.in(2).dtype != x.dtype))
    ctx.error("X, W and B must share one dtype");
  if (!x.has_shape || !w.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t g = ctx.node.attr_int("group", 1);
  if (g < 1) ctx.error("group must be >= 1");
  if (w.shape.size() != x.shape.size())
    ctx.error("W " + shape_str(w.shape) + " and X " + shape_str(x.shape) + " ranks differ");
  if (x.shape[1] != w.shape[1] * g)
    ctx.error("X has " + std::to_string(x.shape[1]) + " channels, W expects " + std::to_string(w.shape[1]) +
              " x group " + std::to_string(g));
  if (w.shape[0] % g != 0) ctx.error("output channels not divisible by group");
  if (ctx.has_input(2) && ctx.in(2).has_shape && ctx.in(2).shape != Shape{w.shape[0]})
    ctx.error("B must have shape [M]");
  auto win = shape_math::conv_window(ctx.node, x.shape, kernel_from(ctx, w.shape), false);
  Shape out{x.shape[0], w.shape[0]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  set_out(ctx, 0, x.dtype, out);
}

void infer_conv_transpose(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const TensorType& w = ctx.in(1);
  require_float(ctx, 0);
  if (w.dtype != x.dtype || (ctx.has_input(2) && ctx.in(2).dtype != x.dtype))
    ctx.error("X, W and B must share one dtype");
  if (!x.has_shape || !w.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  const int64_t g = ctx.node.attr_int("group", 1);
  if (g < 1) ctx.error("group must be >= 1");
  if (w.shape.size() != x.shape.size())
    ctx.error("W " + shape_str(w.shape) + " and X " + shape_str(x.shape) + " ranks differ");
  if (x.shape[1] != w.shape[0])
    ctx.error("X has " + std::to_string(x.shape[1]) + " channels, W has " + std::to_string(w.shape[0]));
  if (w.shape[0] % g != 0) ctx.error("input channels not divisible by group");
  const int64_t m = w.shape[1] * g;
  if (ctx.has_input(2) && ctx.in(2).has_shape && ctx.in(2).shape != Shape{m}) ctx.error("B must have shape [M]");
  auto win = shape_math::conv_transpose_window(ctx.node, x.shape, kernel_from(ctx, w.shape));
  Shape out{x.shape[0], m};
  out.insert(out.end(), win.out.begin(), win.out.end());
  set_out(ctx, 0, x.dtype, out);
}

void infer_pool(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (ctx.node.op_type != "MaxPool") require_float(ctx, 0);
  for (size_t k = 0; k < ctx.outputs.size(); ++k) set_out_unknown(ctx, k, k == 0 ? x.dtype : DType::i64);
  if (!ctx.node.has_attr("kernel_shape")) ctx.error("attribute 'kernel_shape' is missing");
  if (!x.has_shape) return;
  auto win = shape_math::conv_window(ctx.node, x.shape, ctx.node.attr_ints("kernel_shape"), true);
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  set_out(ctx, 0, x.dtype, out);
  if (ctx.outputs.size() > 1) set_out(ctx, 1, DType::i64, out);
}

void infer_global_pool(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  require_float(ctx, 0);
  if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  if (x.shape.size() < 3) ctx.error("input must have rank >= 3");
  Shape out = x.shape;
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  set_out(ctx, 0, x.dtype, out);
}

void infer_resize(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const std::string mode = ctx.node.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") ctx.error("unknown mode '" + mode + "'");
  if (ctx.node.attr_int("antialias", 0) != 0) ctx.error("antialias is opset 18; use segmux.ResizeAntialias");
  if (mode != "nearest") require_float(ctx, 0);
  if (ctx.inputs.size() == 2) ctx.error("the opset-10 form Resize(X, scales) is not supported");
  // Scales / sizes count as absent when omitted or empty.
  const bool scales_present = ctx.has_input(2) && !(ctx.in(2).has_shape && shape_numel(ctx.in(2).shape) == 0);
  const bool sizes_present = ctx.has_input(3) && !(ctx.in(3).has_shape && shape_numel(ctx.in(3).shape) == 0);
  if (sizes_present) require_dtype(ctx, 3, {DType::i64}, "i64");
  if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (scales_present) {
    scales = const_doubles(ctx, 2);
    if (!scales) return set_out_unknown(ctx, 0, x.dtype);
  }
  if (sizes_present) {
    sizes = const_ints(ctx, 3);
    if (!sizes) return set_out_unknown(ctx, 0, x.dtype);
  }
  auto plan = shape_math::resize_plan(ctx.node, x.shape, scales ? &*scales : nullptr, sizes ? &*sizes : nullptr);
  check_buildable(ctx, plan.out);
  set_out(ctx, 0, x.dtype, plan.out);
}

void infer_resize_antialias(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  require_float(ctx, 0);
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.has_input(1))
    sizes = const_ints(ctx, 1);
  else
    sizes = ctx.node.attr_ints("sizes", {});
  if (!x.has_shape || !sizes) return set_out_unknown(ctx, 0, x.dtype);
  if (x.shape.size() < 2) ctx.error("input must have rank >= 2");
  if (sizes->size() != 2 || (*sizes)[0] <= 0 || (*sizes)[1] <= 0)
    ctx.error("sizes must be two positive values [out_height, out_width]");
  check_buildable(ctx, {(*sizes)[0], (*sizes)[1]});
  Shape out = x.shape;
  out[out.size() - 2] = (*sizes)[0];
  out[out.size() - 1] = (*sizes)[1];
  set_out(ctx, 0, x.dtype, out);
}

void infer_roi_align(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  require_float(ctx, 0);
  require_int(ctx, 2);
  if (ctx.in(1).dtype != x.dtype) ctx.error("rois must have X's dtype");
  const std::string mode = ctx.node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.error("unknown mode '" + mode + "'");
  const std::string ctm = ctx.node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.error("unknown coordinate_transformation_mode '" + ctm + "'");
  if (!x.has_shape || !ctx.in(1).has_shape) return set_out_unknown(ctx, 0, x.dtype);
  if (x.shape.size() != 4) ctx.error("X must be 4-D");
  const Shape& r = ctx.in(1).shape;
  if (r.size() != 2 || r[1] != 4) ctx.error("rois must be [num_rois, 4], got " + shape_str(r));
  if (ctx.in(2).has_shape && ctx.in(2).shape != Shape{r[0]}) ctx.error("batch_indices must be [num_rois]");
  const int64_t oh = ctx.node.attr_int("output_height", 1), ow = ctx.node.attr_int("output_width", 1);
  if (oh < 1 || ow < 1) ctx.error("output_height/output_width must be positive");
  set_out(ctx, 0, x.dtype, {r[0], x.shape[1], oh, ow});
}

void infer_einsum(InferContext& ctx) {
  DType t = ctx.in(0).dtype;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.in(i).dtype != t) ctx.error("inputs have different dtypes");
    if (!ctx.in(i).has_shape) return set_out_unknown(ctx, 0, t);
    shapes.push_back(ctx.in(i).shape);
  }
  set_out(ctx, 0, t, shape_math::einsum_plan(ctx.node, shapes).out);
}

}  // namespace

void register_nn_schemas() {
  reg("MatMul", 2, 2, infer_matmul);
  reg("Gemm", 2, 3, infer_gemm);
  reg("Conv", 2, 3, infer_conv);
  reg("ConvTranspose", 2, 3, infer_conv_transpose);
  reg("MaxPool", 1, 1, infer_pool, 1, 2);
  reg("AveragePool", 1, 1, infer_pool);
  reg("LpPool", 1, 1, infer_pool);
  reg("GlobalAveragePool", 1, 1, infer_global_pool);
  reg("GlobalMaxPool", 1, 1, infer_global_pool);
  reg("GlobalLpPool", 1, 1, infer_global_pool);
  reg("Resize", 1, 4, infer_resize);
  reg("ResizeAntialias", 1, 2, infer_resize_antialias, 1, 1, "segmux");
  reg("RoiAlign", 3, 3, infer_roi_align);
  reg("Einsum", 1, 1 << 20, infer_einsum);
}

}  // namespace segmux::ir
