// Schemas of the less common ops: quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), NonMaxSuppression, GridSample, LRN,
// MaxUnpool, Det, BitShift, Unique and the window functions of opset 17.
#include "ir/schemas/schema_util.h"
#include "ir/schemas/schemas.h"
#include "ir/schemas/shape_math.h"

namespace segmux::ir {
using namespace schema_util;

namespace {

void reg(const std::string& op, int min_in, int max_in, InferFn fn, int min_out = 1, int max_out = 1) {
  register_schema(OpSchema{op, "", min_in, max_in, min_out, max_out, std::move(fn)});
}

void require_quant(const InferContext& ctx, size_t i) { require_dtype(ctx, i, {DType::u8, DType::i8}, "u8 or i8"); }

Shape matmul_like(InferContext& ctx, Shape a, Shape b) {
  if (a.empty() || b.empty()) ctx.error("inputs must have rank >= 1");
  const bool av = a.size() == 1, bv = b.size() == 1;
  if (av) a.insert(a.begin(), 1);
  if (bv) b.push_back(1);
  if (a.back() != b[b.size() - 2]) ctx.error("inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  Shape out = broadcast(ctx, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!av) out.push_back(a[a.size() - 2]);
  if (!bv) out.push_back(b.back());
  return out;
}

Shape conv_like(InferContext& ctx, const Shape& x, const Shape& w) {
  const int64_t g = ctx.node.attr_int("group", 1);
  if (g < 1 || w.size() != x.size() || x.size() < 3 || x[1] != w[1] * g || w[0] % g != 0)
    ctx.error("X " + shape_str(x) + " and W " + shape_str(w) + " do not fit (group " + std::to_string(g) + ")");
  std::vector<int64_t> k(w.begin() + 2, w.end());
  auto win = shape_math::conv_window(ctx.node, x, k, false);
  Shape out{x[0], w[0]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  return out;
}

void infer_window_fn(InferContext& ctx) {
  DType t = DType::f32;
  if (!dtype_from_onnx(ctx.node.attr_int("output_datatype", 1), &t)) ctx.error("unsupported output_datatype");
  require_int(ctx, 0);
  auto n = const_int(ctx, 0);
  if (!n) return set_out_unknown(ctx, 0, t);
  if (*n < 0) ctx.error("size must be >= 0");
  set_out(ctx, 0, t, {*n});
}

}  // namespace

void register_misc_schemas() {
  reg("QuantizeLinear", 2, 3, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::f32, DType::i32, DType::f16, DType::bf16}, "f32, f16, bf16 or i32");
    DType t = ctx.has_input(2) ? ctx.in(2).dtype : DType::u8;
    if (t != DType::u8 && t != DType::i8) ctx.error("y_zero_point must be u8 or i8");
    ctx.outputs[0] = TensorType{t, ctx.in(0).shape, ctx.in(0).has_shape};
  });
  reg("DequantizeLinear", 2, 3, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::u8, DType::i8, DType::i32}, "u8, i8 or i32");
    if (ctx.has_input(2) && ctx.in(2).dtype != ctx.in(0).dtype) ctx.error("x_zero_point must have x's dtype");
    ctx.outputs[0] = TensorType{ctx.in(1).dtype, ctx.in(0).shape, ctx.in(0).has_shape};
  });
  reg(
      "DynamicQuantizeLinear", 1, 1,
      [](InferContext& ctx) {
        require_dtype(ctx, 0, {DType::f32}, "f32");
        ctx.outputs[0] = TensorType{DType::u8, ctx.in(0).shape, ctx.in(0).has_shape};
        set_out(ctx, 1, DType::f32, {});
        set_out(ctx, 2, DType::u8, {});
      },
      3, 3);
  reg("MatMulInteger", 2, 4, [](InferContext& ctx) {
    require_quant(ctx, 0);
    require_quant(ctx, 1);
    if (!shapes_known(ctx, {0, 1})) return set_out_unknown(ctx, 0, DType::i32);
    set_out(ctx, 0, DType::i32, matmul_like(ctx, ctx.in(0).shape, ctx.in(1).shape));
  });
  reg("QLinearMatMul", 8, 8, [](InferContext& ctx) {
    require_quant(ctx, 0);
    require_quant(ctx, 3);
    const DType t = ctx.in(7).dtype;
    if (!shapes_known(ctx, {0, 3})) return set_out_unknown(ctx, 0, t);
    set_out(ctx, 0, t, matmul_like(ctx, ctx.in(0).shape, ctx.in(3).shape));
  });
  reg("ConvInteger", 2, 4, [](InferContext& ctx) {
    require_quant(ctx, 0);
    require_quant(ctx, 1);
    if (!shapes_known(ctx, {0, 1})) return set_out_unknown(ctx, 0, DType::i32);
    set_out(ctx, 0, DType::i32, conv_like(ctx, ctx.in(0).shape, ctx.in(1).shape));
  });
  reg("QLinearConv", 8, 9, [](InferContext& ctx) {
    require_quant(ctx, 0);
    require_quant(ctx, 3);
    const DType t = ctx.in(7).dtype;
    if (!shapes_known(ctx, {0, 3})) return set_out_unknown(ctx, 0, t);
    set_out(ctx, 0, t, conv_like(ctx, ctx.in(0).shape, ctx.in(3).shape));
  });
  reg("NonMaxSuppression", 2, 5, [](InferContext& ctx) {
    require_float(ctx, 0);
    if (ctx.in(0).has_shape && (ctx.in(0).shape.size() != 3 || ctx.in(0).shape[2] != 4))
      ctx.error("boxes must be [batch, boxes, 4]");
    if (ctx.in(1).has_shape && ctx.in(1).shape.size() != 3) ctx.error("scores must be [batch, classes, boxes]");
    set_out(ctx, 0, DType::i64, {-1, 3});
  });
  reg("GridSample", 2, 2, [](InferContext& ctx) {
    require_float(ctx, 0);
    const std::string mode = ctx.node.attr_string("mode", "bilinear");
    if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") ctx.error("unknown mode '" + mode + "'");
    const std::string pad = ctx.node.attr_string("padding_mode", "zeros");
    if (pad != "zeros" && pad != "border" && pad != "reflection") ctx.error("unknown padding_mode '" + pad + "'");
    if (!shapes_known(ctx, {0, 1})) return set_out_unknown(ctx, 0, ctx.in(0).dtype);
    const Shape& x = ctx.in(0).shape;
    const Shape& g = ctx.in(1).shape;
    if (x.size() != 4 || g.size() != 4 || g[3] != 2 || g[0] != x[0])
      ctx.error("expects X [N,C,H,W] and grid [N,H_out,W_out,2]");
    set_out(ctx, 0, ctx.in(0).dtype, {x[0], x[1], g[1], g[2]});
  });
  reg("LRN", 1, 1, [](InferContext& ctx) {
    require_float(ctx, 0);
    if (ctx.node.attr_int("size", 0) < 1) ctx.error("attribute 'size' must be >= 1");
    ctx.outputs[0] = ctx.in(0);
  });
  reg("MaxUnpool", 2, 3, [](InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    require_dtype(ctx, 1, {DType::i64}, "i64");
    if (ctx.has_input(2)) {
      auto s = const_ints(ctx, 2);
      if (!s) return set_out_unknown(ctx, 0, x.dtype);
      return set_out(ctx, 0, x.dtype, *s);
    }
    if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
    if (x.shape.size() < 3) ctx.error("input must have rank >= 3 ([N, C, spatial...]), got " + shape_str(x.shape));
    const size_t r = x.shape.size() - 2;
    std::vector<int64_t> k = ctx.node.attr_ints("kernel_shape");
    std::vector<int64_t> st = ctx.node.attr_ints("strides", std::vector<int64_t>(r, 1));
    std::vector<int64_t> pads = ctx.node.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
    if (k.size() != r || st.size() != r || pads.size() != 2 * r)
      ctx.error("kernel_shape/strides/pads do not match the rank");
    Shape out{x.shape[0], x.shape[1]};
    for (size_t i = 0; i < r; ++i) {
      if (k[i] < 1 || st[i] < 1 || pads[i] < 0 || pads[i + r] < 0 || k[i] > (int64_t(1) << 31) ||
          st[i] > (int64_t(1) << 31) || pads[i] > (int64_t(1) << 31) || pads[i + r] > (int64_t(1) << 31))
        ctx.error("kernel_shape and strides must be 1..2^31, pads 0..2^31");
      int64_t size = 0;
      if (__builtin_mul_overflow(x.shape[i + 2] - 1, st[i], &size) || (size += k[i] - pads[i] - pads[i + r]) < 0)
        ctx.error("output size on spatial axis " + std::to_string(i) + " is out of range");
      out.push_back(size);
    }
    set_out(ctx, 0, x.dtype, out);
  });
  reg("Det", 1, 1, [](InferContext& ctx) {
    require_float(ctx, 0);
    const TensorType& x = ctx.in(0);
    if (!x.has_shape) return set_out_unknown(ctx, 0, x.dtype);
    if (x.shape.size() < 2 || x.shape[x.shape.size() - 1] != x.shape[x.shape.size() - 2])
      ctx.error("input must be [*, M, M]");
    set_out(ctx, 0, x.dtype, Shape(x.shape.begin(), x.shape.end() - 2));
  });
  reg("BitShift", 2, 2, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::u8}, "an unsigned integer type (u8)");
    const std::string dir = ctx.node.attr_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT") ctx.error("direction must be LEFT or RIGHT");
    if (ctx.in(1).dtype != ctx.in(0).dtype) ctx.error("inputs have different dtypes");
    if (!shapes_known(ctx, {0, 1})) return set_out_unknown(ctx, 0, ctx.in(0).dtype);
    set_out(ctx, 0, ctx.in(0).dtype, broadcast(ctx, ctx.in(0).shape, ctx.in(1).shape));
  });
  reg(
      "Unique", 1, 1,
      [](InferContext& ctx) {
        const TensorType& x = ctx.in(0);
        if (!x.has_shape) {
          for (size_t k = 0; k < ctx.outputs.size(); ++k) set_out_unknown(ctx, k, k == 0 ? x.dtype : DType::i64);
          return;
        }
        Shape y{-1};
        if (ctx.node.has_attr("axis")) {
          y = x.shape;
          y[size_t(norm_axis(ctx, ctx.node.attr_int("axis", 0), int64_t(y.size())))] = -1;
        }
        set_out(ctx, 0, x.dtype, y);
        for (size_t k = 1; k < ctx.outputs.size(); ++k) set_out(ctx, k, DType::i64, {-1});
      },
      1, 4);
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"}) reg(w, 1, 1, infer_window_fn);
  // Losses (opset 13): scores/log-probabilities [N, C, d...], integer targets [N, d...].
  auto infer_loss = [](InferContext& ctx) {
    require_float(ctx, 0);
    require_int(ctx, 1);
    const TensorType& x = ctx.in(0);
    const std::string red = ctx.node.attr_string("reduction", "mean");
    if (red != "mean" && red != "sum" && red != "none") ctx.error("unknown reduction '" + red + "'");
    if (ctx.outputs.size() > 1) ctx.outputs[1] = x;  // SoftmaxCrossEntropyLoss log_prob
    if (!shapes_known(ctx, {0, 1})) return set_out_unknown(ctx, 0, x.dtype);
    const Shape& t = ctx.in(1).shape;
    if (x.shape.size() < 2 || t.size() != x.shape.size() - 1 || t[0] != x.shape[0])
      ctx.error("target " + shape_str(t) + " does not fit input " + shape_str(x.shape));
    for (size_t d = 1; d < t.size(); ++d)
      if (t[d] != x.shape[d + 1]) ctx.error("target " + shape_str(t) + " does not fit input " + shape_str(x.shape));
    if (ctx.has_input(2) && ctx.in(2).has_shape && ctx.in(2).shape != Shape{x.shape[1]})
      ctx.error("weight must have shape [C]");
    set_out(ctx, 0, x.dtype, red == "none" ? t : Shape{});
  };
  reg("NegativeLogLikelihoodLoss", 2, 3, infer_loss);
  reg("SoftmaxCrossEntropyLoss", 2, 3, infer_loss, 1, 2);
}

}  // namespace segmux::ir
