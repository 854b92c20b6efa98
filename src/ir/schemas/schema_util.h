// Helpers shared by the schema files: broadcasting, axis normalisation, reading small constant inputs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/op_schema.h"

namespace segmux::ir::schema_util {

// Normalises an ONNX axis (negative counts from the end) into [0, rank); errors name the node.
int64_t norm_axis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what = "axis");

// Numpy-style multidirectional broadcast of two shapes; errors name the node.
Shape broadcast(const InferContext& ctx, const Shape& a, const Shape& b);

// Integer values of a constant input (i64 or i32), or nullopt when the data is unknown.
std::optional<std::vector<int64_t>> const_ints(const InferContext& ctx, size_t i);
// Same, but for a scalar or one-element input.
std::optional<int64_t> const_int(const InferContext& ctx, size_t i);
// Float values (any float or int dtype) of a constant input.
std::optional<std::vector<double>> const_doubles(const InferContext& ctx, size_t i);

// Throws when a shape made from data (ConstantOfShape, Tile, Expand, Resize, Range) has a negative
// dimension or more elements than any tensor could hold (guards int64 overflow on hostile input).
void check_buildable(const InferContext& ctx, const Shape& s);

// Sets output k to a dtype with (or without) a shape.
inline void set_out(InferContext& ctx, size_t k, DType t, const Shape& s) {
  if (k < ctx.outputs.size()) ctx.outputs[k] = TensorType{t, s, true};
}
inline void set_out_unknown(InferContext& ctx, size_t k, DType t) {
  if (k < ctx.outputs.size()) ctx.outputs[k] = TensorType{t, {}, false};
}
// True when every listed input that is present has a shape.
bool shapes_known(const InferContext& ctx, std::initializer_list<size_t> inputs);

// Checks the dtype of input i is one of the given list.
void require_dtype(const InferContext& ctx, size_t i, std::initializer_list<DType> allowed, const char* what);
void require_float(const InferContext& ctx, size_t i);
void require_int(const InferContext& ctx, size_t i);  // i64 or i32

}  // namespace segmux::ir::schema_util
