#include "kernels/kernel.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace segmux {

namespace {
class FunctionKernel : public Kernel {
 public:
  explicit FunctionKernel(KernelFn fn) : fn_(std::move(fn)) {}
  void run(KernelContext& ctx) override { fn_(ctx); }

 private:
  KernelFn fn_;
};

using Factory = std::function<std::unique_ptr<Kernel>(const KernelInit&)>;
std::map<std::string, Factory>& reference_table() {
  static std::map<std::string, Factory> t;
  return t;
}
std::string key(const std::string& domain, const std::string& op) {
  return (domain == "ai.onnx" ? std::string() : domain) + "::" + op;
}
}  // namespace

void register_reference_kernels();  // kernels/reference/register.cpp

std::unique_ptr<Kernel> make_function_kernel(KernelFn fn) { return std::make_unique<FunctionKernel>(std::move(fn)); }

void register_reference_kernel(const std::string& domain, const std::string& op_type, Factory factory) {
  reference_table()[key(domain, op_type)] = std::move(factory);
}

void register_reference_kernel_fn(const std::string& domain, const std::string& op_type, KernelFn fn) {
  register_reference_kernel(domain, op_type, [fn](const KernelInit&) { return make_function_kernel(fn); });
}

const Provider& reference_provider() {
  static Provider p = [] {
    static std::once_flag once;
    std::call_once(once, [] { register_reference_kernels(); });
    Provider r;
    r.name = "reference";
    r.make = [](const KernelInit& init) -> std::unique_ptr<Kernel> {
      auto it = reference_table().find(key(init.node.domain, init.node.op_type));
      if (it == reference_table().end()) return nullptr;
      return it->second(init);
    };
    return r;
  }();
  return p;
}

std::string op_name_of_key(const std::string& table_key) {
  const size_t sep = table_key.find("::");
  SEGMUX_CHECK(sep != std::string::npos, "kernel table key '", table_key, "' has no '::'");
  return sep == 0 ? table_key.substr(2) : table_key.substr(0, sep) + "." + table_key.substr(sep + 2);
}

std::vector<std::string> reference_kernel_ops() {
  reference_provider();  // registers them
  std::vector<std::string> names;
  for (const auto& [k, factory] : reference_table()) names.push_back(op_name_of_key(k));
  std::sort(names.begin(), names.end());
  return names;
}

std::unique_ptr<Kernel> create_kernel(const std::vector<const Provider*>& providers, const KernelInit& init,
                                      std::string* chosen) {
  for (const Provider* p : providers) {
    if (auto k = p->make(init)) {
      if (chosen) *chosen = p->name;
      return k;
    }
  }
  fail(init.node.describe(), ": no kernel for this op in any provider");
}

}  // namespace segmux
