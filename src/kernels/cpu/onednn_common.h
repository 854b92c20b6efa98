// oneDNN helpers shared by the matmul and convolution kernels. Internal to src/kernels/cpu.
#pragma once
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/cpu_common.h"

namespace segmux::cpu {

inline dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::memory::dims to_dims(const Shape& s) { return dnnl::memory::dims(s.begin(), s.end()); }

inline dnnl::memory::dims plain_strides(const dnnl::memory::dims& d) {
  dnnl::memory::dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

inline dnnl::memory::desc plain_md(const dnnl::memory::dims& d, dnnl::memory::data_type t) {
  return dnnl::memory::desc(d, t, plain_strides(d));
}

// oneDNN parallelises with OpenMP from the calling thread; this sets its team size for the run.
inline void set_run_threads(int n) { omp_set_num_threads(threads_of(n)); }

inline bool shape_known(const ir::TensorType* t) {
  if (!t || !t->has_shape) return false;
  for (int64_t d : t->shape)
    if (d < 0) return false;
  return true;
}

// The reference kernel for the same node, used for shapes oneDNN does not take.
inline std::unique_ptr<Kernel> reference_fallback(const KernelInit& init) { return reference_provider().make(init); }

inline void run_fallback(std::unique_ptr<Kernel>& fallback, KernelContext& ctx) {
  SEGMUX_CHECK(fallback != nullptr, ctx.node.describe(),
               ": oneDNN cannot run these shapes and no reference kernel exists");
  fallback->run(ctx);
}

}  // namespace segmux::cpu
