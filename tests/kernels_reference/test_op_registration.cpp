// One shape for op registration: an op is known by its schema (shape inference, src/ir/schemas), runs
// everywhere through its reference kernel (the ground truth), and may have optimized kernels (CPU,
// CUDA). So every op with a CPU or CUDA kernel has a schema and a reference kernel, and every schema a
// reference kernel: an op registered in one table and forgotten in another fails here, by name.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ir/op_schema.h"
#include "kernels/cuda/cuda_provider.h"
#include "kernels/kernel.h"

namespace segmux {
namespace {

std::set<std::string> schema_ops() {
  ir::register_builtin_schemas();
  std::set<std::string> names;
  for (const ir::OpSchema* s : ir::all_schemas())
    names.insert(s->domain.empty() ? s->op_type : s->domain + "." + s->op_type);
  return names;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// The names of `ops` missing from `known`, comma separated ("" when none).
std::string missing(const std::vector<std::string>& ops, const std::set<std::string>& known) {
  std::string out;
  for (const auto& op : ops)
    if (!known.count(op)) out += (out.empty() ? "" : ", ") + op;
  return out;
}

TEST(OpRegistration, AnOpMissingFromATableIsNamed) {
  EXPECT_EQ(missing({"Add", "segmux.Only", "Mul"}, {"Add", "Mul"}), "segmux.Only");
  EXPECT_EQ(missing({"Add"}, {"Add"}), "");
}

TEST(OpRegistration, ListsAreNotEmpty) {
  EXPECT_GT(schema_ops().size(), 50u);
  EXPECT_GT(reference_kernel_ops().size(), 50u);
  EXPECT_GT(cpu_kernel_ops().size(), 10u);
  EXPECT_GT(cuda::cuda_supported_ops().size(), 10u);
  EXPECT_EQ(op_name_of_key("::Add"), "Add");
  EXPECT_EQ(op_name_of_key("segmux::Linear"), "segmux.Linear");
}

TEST(OpRegistration, EveryReferenceKernelHasASchema) { EXPECT_EQ(missing(reference_kernel_ops(), schema_ops()), ""); }

TEST(OpRegistration, EverySchemaHasAReferenceKernel) {
  const std::set<std::string> schemas = schema_ops();
  EXPECT_EQ(missing({schemas.begin(), schemas.end()}, as_set(reference_kernel_ops())), "");
}

TEST(OpRegistration, EveryCpuKernelHasASchemaAndAReferenceKernel) {
  EXPECT_EQ(missing(cpu_kernel_ops(), schema_ops()), "");
  EXPECT_EQ(missing(cpu_kernel_ops(), as_set(reference_kernel_ops())), "");
}

TEST(OpRegistration, EveryCudaKernelHasASchemaAndAReferenceKernel) {
  EXPECT_EQ(missing(cuda::cuda_supported_ops(), schema_ops()), "");
  EXPECT_EQ(missing(cuda::cuda_supported_ops(), as_set(reference_kernel_ops())), "");
}

}  // namespace
}  // namespace segmux
