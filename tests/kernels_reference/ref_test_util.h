// Runs one node through schema inference and its reference kernel, as the Interpreter does.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/op_schema.h"
#include "kernels/kernel.h"

namespace segmux::test {

using ir::Attrs;

// Inputs that are undefined Tensors are omitted optional inputs.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                                  int num_outputs = 1, const std::string& domain = "") {
  ir::Node node;
  node.op_type = op;
  node.domain = domain;
  node.name = "test_" + op;
  node.attrs = attrs;
  std::vector<ir::TensorType> types(inputs.size());
  std::vector<const ir::TensorType*> tin(inputs.size(), nullptr);
  std::vector<const Tensor*> vin(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].defined() ? int(i) : -1);
    if (!inputs[i].defined()) continue;
    types[i] = ir::TensorType{inputs[i].dtype(), inputs[i].shape(), true};
    tin[i] = &types[i];
    vin[i] = &inputs[i];
  }
  for (int k = 0; k < num_outputs; ++k) node.outputs.push_back(100 + k);
  auto out_types = ir::infer_node(node, tin, vin);
  KernelInit init{node, tin, vin, out_types, 1};
  auto kernel = reference_provider().make(init);
  if (!kernel) fail("no reference kernel for ", op);
  std::vector<Tensor> outs(static_cast<size_t>(num_outputs));
  std::vector<Tensor*> ptrs;
  for (int k = 0; k < num_outputs; ++k) {
    bool known = out_types[size_t(k)].has_shape;
    for (int64_t d : out_types[size_t(k)].shape) known = known && d >= 0;
    if (known) outs[size_t(k)] = Tensor(out_types[size_t(k)].dtype, out_types[size_t(k)].shape);
    ptrs.push_back(&outs[size_t(k)]);
  }
  KernelContext kctx{node, vin, ptrs, 1};
  kernel->run(kctx);
  for (int k = 0; k < num_outputs; ++k) {
    if (!outs[size_t(k)].defined()) fail("kernel left output ", k, " unset");
    if (out_types[size_t(k)].has_shape) {
      // The schema and the kernel must agree (up to data-dependent -1 dims).
      const Shape& s = out_types[size_t(k)].shape;
      const Shape& got = outs[size_t(k)].shape();
      if (s.size() != got.size()) fail("schema rank differs from kernel output rank");
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] >= 0 && s[d] != got[d]) fail("schema shape ", shape_str(s), " vs kernel ", shape_str(got));
    }
    if (outs[size_t(k)].dtype() != out_types[size_t(k)].dtype) fail("schema dtype differs from kernel dtype");
  }
  return outs;
}

inline Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                   const std::string& domain = "") {
  return run_op(op, inputs, attrs, 1, domain)[0];
}

inline Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_vector<float>(s, v); }
inline Tensor i64(const Shape& s, const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>(s, v); }
inline Tensor i64s(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); }
inline Tensor b8(const Shape& s, const std::vector<bool>& v) { return Tensor::from_vector<bool>(s, v); }
// Values 0, 1, 2, ... (times step) as f32.
inline Tensor iota_f32(const Shape& s, float step = 1.0f, float start = 0.0f) {
  Tensor t(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * float(i);
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.get_as_double(int64_t(i));
  return v;
}

// Checks shape and values (absolute tolerance, NaN matches NaN).
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& expect, double tol = 1e-6) {
  ASSERT_EQ(shape_str(t.shape()), shape_str(shape));
  ASSERT_EQ(size_t(t.numel()), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    const double got = t.get_as_double(int64_t(i));
    if (got == expect[i]) continue;  // also matches infinities
    if (std::isnan(expect[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
    } else {
      EXPECT_NEAR(got, expect[i], tol) << "element " << i;
    }
  }
}

}  // namespace segmux::test
