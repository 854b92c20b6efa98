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

// A constant weight reordered once into each layout oneDNN's primitives ask for (format_tag::any), one
// copy per distinct layout: plans for other input shapes that want the same layout share it. The
// matmul and convolution kernels prepack through it. `bf16_values`: the weight rounded to bf16 first
// (packed as f32: bf16 emulation where oneDNN has no bf16 kernel for this CPU).
class PackedWeight {
 public:
  explicit PackedWeight(Tensor weight) : weight_(std::move(weight)) {}
  // The weight, whose bytes `user` describes, in layout `want`.
  std::shared_ptr<dnnl::memory> get(const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                                    bool bf16_values = false);
  size_t bytes() const;  // all packed copies

 private:
  struct Pack {
    bool bf16_values;
    std::shared_ptr<dnnl::memory> mem;
  };
  Tensor weight_, rounded_;
  std::vector<Pack> packs_;
};

// Buffers a oneDNN kernel needs only during one run() (activations reordered to the primitive's layout or
// converted to bf16, the scratchpad): shared by every kernel the calling thread runs, since a thread runs
// one kernel at a time. Per-kernel buffers would only add up: each is touched on its first run and kept.
enum class WorkSlot { src = 0, dst = 1, scratch = 2 };
constexpr int kWorkSlots = 3;
// 64-byte aligned, at least `bytes` (contents undefined); valid until the next call for the same slot on
// this thread.
void* run_workspace(WorkSlot slot, size_t bytes);
// A oneDNN memory for `md` on the workspace slot (an empty memory for a zero-size descriptor).
inline dnnl::memory workspace_memory(WorkSlot slot, const dnnl::memory::desc& md) {
  return dnnl::memory(md, cpu_engine(), run_workspace(slot, md.get_size()));
}

// Copies n floats rounded to bf16 values (the activations of an emulated bf16 primitive).
void round_to_bf16_values(const float* src, float* dst, int64_t n, int num_threads);
// bf16 activations of an emulated bf16 primitive: widened to f32 (exact), resp. its f32 result stored as
// bf16 (round to nearest even, as f32_to_bf16).
void bf16_to_f32_values(const uint16_t* src, float* dst, int64_t n, int num_threads);
void f32_to_bf16_values(const float* src, uint16_t* dst, int64_t n, int num_threads);

// ConvTranspose with kernel == stride (no pads, dilation, groups), f32 or bf16, as one GEMM and a
// scatter (onednn_deconv_gemm.cpp); nullptr where it does not apply or oneDNN has no fast matmul of
// that precision here.
std::unique_ptr<Kernel> make_deconv_gemm(const KernelInit& init);

inline void run_fallback(std::unique_ptr<Kernel>& fallback, KernelContext& ctx) {
  SEGMUX_CHECK(fallback != nullptr, ctx.node.describe(),
               ": oneDNN cannot run these shapes and no reference kernel exists");
  fallback->run(ctx);
}

}  // namespace segmux::cpu
