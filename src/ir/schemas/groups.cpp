#include "ir/schemas/schemas.h"

namespace segmux::ir {

std::vector<SchemaGroupFn> schema_groups() {
  return {
      register_elementwise_schemas, register_shape_schemas, register_reduce_schemas,
      register_nn_schemas,          register_misc_schemas,
      register_segmux_schemas,  // segmux_ops.cpp: fused ops (Linear, Gelu, GroupNorm, Attention)
  };
}

bool dtype_from_onnx(int64_t onnx_type, DType* out) {
  switch (onnx_type) {
    case 1:
      *out = DType::f32;
      return true;
    case 2:
      *out = DType::u8;
      return true;
    case 3:
      *out = DType::i8;
      return true;
    case 6:
      *out = DType::i32;
      return true;
    case 7:
      *out = DType::i64;
      return true;
    case 9:
      *out = DType::boolean;
      return true;
    case 10:
      *out = DType::f16;
      return true;
    case 11:
      *out = DType::f64;
      return true;
    case 16:
      *out = DType::bf16;
      return true;
    default:
      return false;
  }
}

int64_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::f32:
      return 1;
    case DType::u8:
      return 2;
    case DType::i8:
      return 3;
    case DType::i32:
      return 6;
    case DType::i64:
      return 7;
    case DType::boolean:
      return 9;
    case DType::f16:
      return 10;
    case DType::f64:
      return 11;
    case DType::bf16:
      return 16;
  }
  return 0;
}

}  // namespace segmux::ir
