// Test harness: runs one node through a provider (optimized "cpu" or "reference") and compares.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/random_tensor.h"
#include "ir/builder.h"
#include "ir/op_schema.h"
#include "kernels/isa.h"
#include "kernels/kernel.h"

namespace segmux::testing_cpu {

struct Input {
  Tensor t;
  bool constant = false;  // passed to the kernel at creation (prepacking path)
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

// Runs `node` on `inputs` with the given provider. *chosen (if given) is set false when the provider
// declined the node.
inline std::vector<Tensor> run_node(const Provider& p, ir::Node node, const std::vector<Input>& inputs, int threads = 2,
                                    bool* handled = nullptr) {
  node.inputs.clear();
  std::vector<ir::TensorType> types(inputs.size());
  std::vector<const ir::TensorType*> tin(inputs.size(), nullptr);
  std::vector<const Tensor*> consts(inputs.size(), nullptr), vals(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].omitted ? -1 : int(i));
    if (inputs[i].omitted) continue;
    types[i] = ir::TensorType{inputs[i].t.dtype(), inputs[i].t.shape(), true};
    tin[i] = &types[i];
    if (inputs[i].constant) consts[i] = &inputs[i].t;
    vals[i] = &inputs[i].t;
  }
  auto out_types = ir::infer_node(node, tin, consts);
  KernelInit init{node, tin, consts, out_types, threads};
  auto kernel = p.make(init);
  if (handled) *handled = kernel != nullptr;
  if (!kernel) return {};
  std::vector<Tensor> outs;
  for (auto& t : out_types) outs.emplace_back(t.dtype, t.shape);
  std::vector<Tensor*> out_ptrs;
  for (auto& t : outs) out_ptrs.push_back(&t);
  KernelContext ctx{node, vals, out_ptrs, threads};
  kernel->run(ctx);
  return outs;
}

using test::random_tensor;

inline Tensor bf16_rounded(const Tensor& t) {
  Tensor c = t.clone();
  float* p = c.data<float>();
  for (int64_t i = 0; i < c.numel(); ++i) p[i] = round_to_bf16(p[i]);
  return c;
}

// |got - want| <= atol + rtol * |want| elementwise (NaN must match NaN, inf must match exactly).
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(got.shape()) << " vs " << shape_str(want.shape());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get_as_double(i), w = want.get_as_double(i);
    if (std::isnan(w) || std::isinf(w)) {
      if (!(std::isnan(w) ? std::isnan(g) : g == w))
        return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      continue;
    }
    double err = std::fabs(g - w);
    if (!(err <= atol + rtol * std::fabs(w)))
      return ::testing::AssertionFailure()
             << "element " << i << " of " << shape_str(want.shape()) << ": got " << g << ", want " << w << " (err "
             << err << ", allowed " << atol + rtol * std::fabs(w) << ")";
    worst = std::max(worst, err);
  }
  return ::testing::AssertionSuccess() << "max err " << worst;
}

// Runs the node on both providers; the optimized one must handle it (expect_handled) and agree.
inline void expect_matches_reference(const ir::Node& node, const std::vector<Input>& inputs, double atol, double rtol,
                                     const std::string& label, bool expect_handled = true, int threads = 2) {
  bool handled = false;
  auto got = run_node(cpu_provider(), node, inputs, threads, &handled);
  EXPECT_EQ(handled, expect_handled) << label;
  if (!handled) return;
  bool ref_handled = false;
  auto want = run_node(reference_provider(), node, inputs, 1, &ref_handled);
  ASSERT_TRUE(ref_handled) << label << ": no reference kernel for " << node.op_type;
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i], atol, rtol)) << label << " output " << i;
}

// A test run at one instruction-set level (the parameter): kernels created in the test use that level's
// loops; levels this CPU lacks are skipped. Instantiate with SEGMUX_FOR_EACH_ISA(suite).
class AtIsaLevel : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (int(GetParam()) > int(cpu_isa())) GTEST_SKIP() << "this CPU has no " << isa_name(GetParam());
    previous_ = active_isa();
    ASSERT_EQ(set_active_isa(GetParam()), GetParam());
  }
  void TearDown() override { set_active_isa(previous_); }

 private:
  Isa previous_ = Isa::generic;
};

inline std::string isa_param_name(const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); }

#define SEGMUX_FOR_EACH_ISA(suite)                                                                                \
  INSTANTIATE_TEST_SUITE_P(Isa, suite,                                                                            \
                           ::testing::Values(::segmux::Isa::generic, ::segmux::Isa::avx2, ::segmux::Isa::avx512), \
                           ::segmux::testing_cpu::isa_param_name)

}  // namespace segmux::testing_cpu
