// Schemas of element-wise ops: unary math and activations, broadcasting binary ops, variadic ops,
// comparisons, logic, Where, Cast. ONNX opset 17 semantics.
#include "ir/schemas/schema_util.h"
#include "ir/schemas/schemas.h"

namespace segmux::ir {
using namespace schema_util;

namespace {

constexpr int kManyInputs = 1 << 20;  // "variadic"

void reg(const std::string& op, int min_in, int max_in, InferFn fn, int min_out = 1, int max_out = 1) {
  register_schema(OpSchema{op, "", min_in, max_in, min_out, max_out, std::move(fn)});
}

// Output = input 0's type and shape.
void same_as_input(InferContext& ctx) { ctx.outputs[0] = ctx.in(0); }

void unary(const std::string& op, bool float_only) {
  reg(op, 1, 1, [float_only](InferContext& ctx) {
    if (float_only)
      require_float(ctx, 0);
    else if (ctx.in(0).dtype == DType::boolean)
      ctx.error("bool input is not supported");
    same_as_input(ctx);
  });
}

// Broadcast output type over the present inputs in [first, last); all must share input `first`'s dtype
// unless `check_same` is false.
TensorType broadcast_type(const InferContext& ctx, size_t first, size_t last, bool check_same) {
  TensorType t;
  t.dtype = ctx.in(first).dtype;
  t.has_shape = true;
  bool started = false;
  for (size_t i = first; i < last; ++i) {
    const TensorType& x = ctx.in(i);
    if (check_same && x.dtype != t.dtype)
      ctx.error("inputs have different dtypes (" + std::string(dtype_name(t.dtype)) + " and " +
                std::string(dtype_name(x.dtype)) + ")");
    if (!x.has_shape) {
      t.has_shape = false;
      continue;
    }
    if (!started) {
      t.shape = x.shape;
      started = true;
    } else {
      t.shape = broadcast(ctx, t.shape, x.shape);
    }
  }
  if (!t.has_shape) t.shape.clear();
  return t;
}

void binary_arith(const std::string& op) {
  reg(op, 2, 2, [](InferContext& ctx) {
    if (ctx.in(0).dtype == DType::boolean) ctx.error("bool inputs are not supported");
    ctx.outputs[0] = broadcast_type(ctx, 0, 2, true);
  });
}

void compare(const std::string& op) {
  reg(op, 2, 2, [](InferContext& ctx) {
    TensorType t = broadcast_type(ctx, 0, 2, true);
    t.dtype = DType::boolean;
    ctx.outputs[0] = t;
  });
}

void logic(const std::string& op) {
  reg(op, 2, 2, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::boolean}, "bool");
    require_dtype(ctx, 1, {DType::boolean}, "bool");
    ctx.outputs[0] = broadcast_type(ctx, 0, 2, true);
  });
}

void variadic(const std::string& op, bool float_only) {
  reg(op, 1, kManyInputs, [float_only](InferContext& ctx) {
    if (float_only) require_float(ctx, 0);
    if (ctx.in(0).dtype == DType::boolean) ctx.error("bool inputs are not supported");
    ctx.outputs[0] = broadcast_type(ctx, 0, ctx.inputs.size(), true);
  });
}

}  // namespace

void register_elementwise_schemas() {
  for (const char* op :
       {"Sqrt",      "Exp",   "Log",   "Erf",  "Tanh",        "Sigmoid",        "Reciprocal", "Sin",
        "Cos",       "Tan",   "Asin",  "Acos", "Atan",        "Sinh",           "Cosh",       "Asinh",
        "Acosh",     "Atanh", "Floor", "Ceil", "Round",       "Softsign",       "Softplus",   "HardSwish",
        "LeakyRelu", "Elu",   "Selu",  "Celu", "HardSigmoid", "ThresholdedRelu"})
    unary(op, true);
  for (const char* op : {"Relu", "Neg", "Abs", "Sign", "Shrink"}) unary(op, false);

  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod"}) binary_arith(op);
  reg("Pow", 2, 2, [](InferContext& ctx) {
    if (ctx.in(0).dtype == DType::boolean || ctx.in(1).dtype == DType::boolean)
      ctx.error("bool inputs are not supported");
    ctx.outputs[0] = broadcast_type(ctx, 0, 2, false);
    ctx.outputs[0].dtype = ctx.in(0).dtype;
  });
  reg("PRelu", 2, 2, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32}, "a numeric type");
    TensorType t = broadcast_type(ctx, 0, 2, true);
    // Slope must broadcast to X (unidirectional).
    if (t.has_shape && t.shape != ctx.in(0).shape)
      ctx.error("slope " + shape_str(ctx.in(1).shape) + " does not broadcast to X " + shape_str(ctx.in(0).shape));
    ctx.outputs[0] = ctx.in(0);
  });
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) compare(op);
  for (const char* op : {"And", "Or", "Xor"}) logic(op);
  reg("Not", 1, 1, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::boolean}, "bool");
    same_as_input(ctx);
  });
  for (const char* op : {"Sum", "Max", "Min"}) variadic(op, false);
  variadic("Mean", true);

  reg("Where", 3, 3, [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::boolean}, "bool");
    if (ctx.in(1).dtype != ctx.in(2).dtype) ctx.error("X and Y have different dtypes");
    TensorType t = broadcast_type(ctx, 0, 3, false);
    t.dtype = ctx.in(1).dtype;
    ctx.outputs[0] = t;
  });
  reg("Clip", 1, 3, [](InferContext& ctx) {
    if (ctx.in(0).dtype == DType::boolean) ctx.error("bool input is not supported");
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      if (ctx.in(i).dtype != ctx.in(0).dtype) ctx.error("min/max must have the input's dtype");
      if (ctx.in(i).has_shape && shape_numel(ctx.in(i).shape) != 1) ctx.error("min/max must be scalars");
    }
    same_as_input(ctx);
  });
  reg("IsNaN", 1, 1, [](InferContext& ctx) {
    require_float(ctx, 0);
    ctx.outputs[0] = ctx.in(0);
    ctx.outputs[0].dtype = DType::boolean;
  });
  reg("IsInf", 1, 1, [](InferContext& ctx) {
    require_float(ctx, 0);
    ctx.outputs[0] = ctx.in(0);
    ctx.outputs[0].dtype = DType::boolean;
  });
  reg("Cast", 1, 1, [](InferContext& ctx) {
    DType to;
    if (!ctx.node.has_attr("to")) ctx.error("attribute 'to' is missing");
    int64_t t = ctx.node.attr_int("to", 0);
    if (!dtype_from_onnx(t, &to)) ctx.error("cast to ONNX data type " + std::to_string(t) + " is not supported");
    ctx.outputs[0] = ctx.in(0);
    ctx.outputs[0].dtype = to;
  });
  reg("CastLike", 2, 2, [](InferContext& ctx) {
    ctx.outputs[0] = ctx.in(0);
    ctx.outputs[0].dtype = ctx.in(1).dtype;
  });
  reg("Identity", 1, 1, same_as_input);
  reg(
      "Dropout", 1, 3,
      [](InferContext& ctx) {
        if (auto mode = const_doubles(ctx, 2)) {
          if (!mode->empty() && (*mode)[0] != 0) ctx.error("training_mode=1 is not supported (inference only)");
        }
        same_as_input(ctx);
        if (ctx.outputs.size() > 1) {
          ctx.outputs[1] = ctx.in(0);
          ctx.outputs[1].dtype = DType::boolean;
        }
      },
      1, 2);
}

}  // namespace segmux::ir
