// Schema groups (one per file in this folder). Add a group here and to schema_groups().
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace segmux::ir {

using SchemaGroupFn = void (*)();
std::vector<SchemaGroupFn> schema_groups();

// The groups (each in its own file).
void register_elementwise_schemas();  // elementwise.cpp: unary/binary/variadic math, compare, logic, Cast
void register_shape_schemas();        // shape_ops.cpp: Reshape, Transpose, Concat, Slice, Gather, ...
void register_reduce_schemas();       // reduce.cpp: Reduce*, ArgMax, Softmax, normalizations
void register_nn_schemas();           // nn.cpp: MatMul, Gemm, Conv, pools, Resize, RoiAlign, Einsum, ...
void register_misc_schemas();         // misc.cpp: quantization, NonMaxSuppression, GridSample, LRN, ...
void register_segmux_schemas();       // segmux_ops.cpp: fused ops of domain "segmux"

// ONNX TensorProto.DataType numbers (Cast's "to", ConstantOfShape, EyeLike, ...) <-> our DType.
// dtype_from_onnx returns false for types segmux does not have (string, u16, complex, ...).
bool dtype_from_onnx(int64_t onnx_type, DType* out);
int64_t dtype_to_onnx(DType t);

}  // namespace segmux::ir
