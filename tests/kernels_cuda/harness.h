// Runs one node on the CUDA provider (device tensors, outputs poisoned with NaN first) and on the
// reference provider, and compares: every output finite where the reference is, and the relative
// error max|got - want| / max|want| within the precision's limit.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/random_tensor.h"
#include "ir/builder.h"
#include "ir/op_schema.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/cuda_provider.h"

namespace segmux::testing_cuda {

constexpr double kFp32Limit = 1e-5, kTf32Limit = 1e-3, kBf16Limit = 1e-2;

struct Input {
  Tensor t;
  bool constant = false;  // given to the kernel at creation (weights, indices, bounds)
  bool omitted = false;
};

inline ir::Node make_node(const std::string& op, const ir::Attrs& attrs = {}, const std::string& domain = "",
                          int num_outputs = 1) {
  ir::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = "test_" + op;
  n.attrs = attrs;
  for (int i = 0; i < num_outputs; ++i) n.outputs.push_back(i);
  return n;
}

inline Tensor nan_filled(DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  if (dtype == DType::f32)
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  else
    std::memset(t.raw(), 0xA5, t.nbytes());  // not a valid bool/index pattern either
  return t;
}

// Runs `node` with `p` (the reference on host tensors, the CUDA provider on device copies).
inline std::vector<Tensor> run_node(const Provider& p, ir::Node node, const std::vector<Input>& inputs,
                                    bool on_device) {
  node.inputs.clear();
  std::vector<ir::TensorType> types(inputs.size());
  std::vector<const ir::TensorType*> tin(inputs.size(), nullptr);
  std::vector<const Tensor*> consts(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].omitted ? -1 : int(i));
    if (inputs[i].omitted) continue;
    types[i] = ir::TensorType{inputs[i].t.dtype(), inputs[i].t.shape(), true};
    tin[i] = &types[i];
    if (inputs[i].constant) consts[i] = &inputs[i].t;
  }
  const auto out_types = ir::infer_node(node, tin, consts);
  KernelInit init{node, tin, consts, out_types, 1};
  cuda::Stream stream = nullptr;
  if (on_device) cuda::check_cuda(cuda::stream_create(&stream), "test stream");
  cuda::StreamScope scope(stream);
  auto kernel = p.make(init);
  EXPECT_TRUE(kernel) << p.name << " has no kernel for " << node.op_type << ": " << cuda::cuda_unsupported_reason(init);
  if (!kernel) return {};
  std::vector<Tensor> vals(inputs.size()), outs;
  std::vector<const Tensor*> vptr(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].omitted) continue;
    vals[i] = on_device ? cuda::upload(inputs[i].t, stream) : inputs[i].t;
    vptr[i] = &vals[i];
  }
  for (const auto& t : out_types) {
    Tensor poisoned = nan_filled(t.dtype, t.shape);
    outs.push_back(on_device ? cuda::upload(poisoned, stream) : poisoned);
  }
  std::vector<Tensor*> optr;
  for (auto& t : outs) optr.push_back(&t);
  KernelContext ctx{node, vptr, optr, 1};
  kernel->run(ctx);
  if (!on_device) return outs;
  std::vector<Tensor> host;
  for (auto& t : outs) host.push_back(cuda::download(t, stream));
  cuda::stream_destroy(stream);
  return host;
}

inline ::testing::AssertionResult close_relative(const Tensor& got, const Tensor& want, double limit) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "got " << dtype_name(got.dtype()) << " " << shape_str(got.shape())
                                         << ", want " << dtype_name(want.dtype()) << " " << shape_str(want.shape());
  double scale = 0, worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_as_double(i);
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get_as_double(i), w = want.get_as_double(i);
    if (!std::isfinite(w)) {
      if (!(std::isnan(w) ? std::isnan(g) : g == w))
        return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      continue;
    }
    if (!std::isfinite(g)) return ::testing::AssertionFailure() << "element " << i << " is " << g << ", want " << w;
    const double err = std::fabs(g - w);
    if (err > worst) worst = err, worst_at = i;
  }
  const double rel = scale > 0 ? worst / scale : worst;
  if (rel > limit)
    return ::testing::AssertionFailure() << "relative error " << rel << " > " << limit << " (element " << worst_at
                                         << ": got " << got.get_as_double(worst_at) << ", want "
                                         << want.get_as_double(worst_at) << ")";
  return ::testing::AssertionSuccess() << "relative error " << rel;
}

// The CUDA kernel (exact fp32 or TF32 GEMMs) against the reference on the same inputs.
inline void expect_matches_reference(const ir::Node& node, const std::vector<Input>& inputs, double limit,
                                     const std::string& label, cuda::Fp32Gemm gemm = cuda::Fp32Gemm::exact) {
  const auto got = run_node(cuda::cuda_provider(gemm), node, inputs, true);
  const auto want = run_node(reference_provider(), node, inputs, false);
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(close_relative(got[i], want[i], limit)) << label << " output " << i;
}

using test::random_tensor;

}  // namespace segmux::testing_cuda
