// Test-only ops in the "segmux" domain (schema + reference kernel), so ONNX I/O mechanics can be tested
// without depending on which ONNX ops exist yet. Names start with "Test" to stay out of everyone's way.
#pragma once
#include <mutex>

#include "ir/op_schema.h"
#include "kernels/kernel.h"

namespace segmux::test_ops {

inline void register_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::register_builtin_schemas();
    // y = x * scale + shift (f32), element-wise.
    ir::register_schema(
        ir::OpSchema{"TestAffine", "segmux", 1, 1, 1, 1, [](ir::InferContext& c) { c.outputs[0] = c.in(0); }});
    register_reference_kernel_fn("segmux", "TestAffine", [](KernelContext& k) {
      const Tensor& x = *k.inputs[0];
      Tensor& y = *k.outputs[0];
      const float scale = k.node.attr_float("scale", 1.0f), shift = k.node.attr_float("shift", 0.0f);
      for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = x.data<float>()[i] * scale + shift;
    });
    // y = concat of all inputs, flattened (f32).
    ir::register_schema(ir::OpSchema{"TestConcatAll", "segmux", 1, 8, 1, 1, [](ir::InferContext& c) {
                                       int64_t n = 0;
                                       bool known = true;
                                       for (size_t i = 0; i < c.inputs.size(); ++i) {
                                         known = known && c.in(i).has_shape;
                                         if (known) n += shape_numel(c.in(i).shape);
                                       }
                                       c.outputs[0] = ir::TensorType{DType::f32, {n}, known};
                                     }});
    register_reference_kernel_fn("segmux", "TestConcatAll", [](KernelContext& k) {
      float* out = k.outputs[0]->data<float>();
      for (const Tensor* t : k.inputs)
        for (int64_t i = 0; i < t->numel(); ++i) *out++ = t->data<float>()[i];
    });
    // Every output copies input 0's type; used to test attributes and optional slots.
    ir::register_schema(ir::OpSchema{"TestRecordAttrs", "segmux", 1, 3, 1, 3, [](ir::InferContext& c) {
                                       for (auto& o : c.outputs) o = c.in(0);
                                     }});
    register_reference_kernel_fn("segmux", "TestRecordAttrs", [](KernelContext& k) {
      for (Tensor* o : k.outputs)
        if (o && o->defined()) std::memcpy(o->raw(), k.inputs[0]->raw(), o->nbytes());
    });
  });
}

}  // namespace segmux::test_ops
