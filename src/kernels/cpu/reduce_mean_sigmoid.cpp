// ReduceMean over one contiguous run of axes and Sigmoid, f32, multi-threaded (the memory encoder's
// LayerNorm2d and mask-input sigmoid ran on the single-threaded reference kernels: ~45 % of its time).
// Both compute in double like the reference kernels, so results are identical: ReduceMean in plain
// loops the compiler vectorises, Sigmoid through the ISA tables (simd.h: a vector exp accurate enough
// that only values at a float rounding boundary fall back to libm's exp).
#include <cstring>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu {
namespace {

class SigmoidKernel : public Kernel {
 public:
  void run(KernelContext& ctx) override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t n = ctx.inputs[0]->numel();
    parallel_chunks((n + 15) / 16, n < 32768 ? 1 : ctx.num_threads, [&](int64_t b, int64_t e) {
      const int64_t lo = b * 16, hi = std::min(n, e * 16);
      sigmoid_(x + lo, y + lo, hi - lo);
    });
  }

 private:
  decltype(EltwiseFns::sigmoid) sigmoid_ = eltwise_fns().sigmoid;
};

// Mean over axes [first, last] of x: viewed as [outer, R, inner], out [outer, inner].
class ReduceMeanKernel : public Kernel {
 public:
  ReduceMeanKernel(int first, int last) : first_(first), last_(last) {}
  void run(KernelContext& ctx) override {
    const Tensor& xt = *ctx.inputs[0];
    SEGMUX_CHECK(last_ < xt.rank(), ctx.node.describe(), ": reduced axis beyond the input's rank");
    int64_t outer = 1, R = 1, inner = 1;
    for (int d = 0; d < xt.rank(); ++d) (d < first_ ? outer : d <= last_ ? R : inner) *= xt.dim(d);
    const float* x = xt.data<float>();
    float* y = ctx.outputs[0]->data<float>();
    SEGMUX_CHECK(ctx.outputs[0]->numel() == outer * inner, ctx.node.describe(), ": output size mismatch");
    if (outer * inner == 0) return;
    if (R == 0) {  // the mean of nothing, as the reference: 0 / 0
      std::fill(y, y + outer * inner, std::nanf(""));
      return;
    }
    const double count = double(R);
    constexpr int64_t kChunk = 512;
    const int64_t chunks = (inner + kChunk - 1) / kChunk;
    const int nt = outer * inner * R < 65536 ? 1 : ctx.num_threads;
    parallel_items(outer * chunks, nt, [&](int64_t item, int) {
      const int64_t o = item / chunks, j0 = (item % chunks) * kChunk, len = std::min(kChunk, inner - j0);
      double acc[kChunk];
      std::fill(acc, acc + len, 0.0);
      const float* base = x + o * R * inner + j0;
      for (int64_t r = 0; r < R; ++r) {
        const float* row = base + r * inner;
        for (int64_t j = 0; j < len; ++j) acc[j] += double(row[j]);
      }
      float* out = y + o * inner + j0;
      for (int64_t j = 0; j < len; ++j) out[j] = float(acc[j] / count);
    });
  }

 private:
  int first_, last_;
};

}  // namespace

std::unique_ptr<Kernel> make_sigmoid(const KernelInit& init) {
  if (init.inputs.size() != 1 || !init.inputs[0] || init.inputs[0]->dtype != DType::f32) return nullptr;
  return std::make_unique<SigmoidKernel>();
}

std::unique_ptr<Kernel> make_reduce_mean(const KernelInit& init) {
  const ir::TensorType* x = init.inputs.empty() ? nullptr : init.inputs[0];
  if (!x || x->dtype != DType::f32 || !x->has_shape || x->shape.empty()) return nullptr;
  if (init.outputs.empty() || init.outputs[0].dtype != DType::f32) return nullptr;
  const ir::Node& n = init.node;
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  if (init.inputs.size() > 1 && init.inputs[1]) {  // opset 18: axes as an input, which must be constant here
    const Tensor* a = init.constants.size() > 1 ? init.constants[1] : nullptr;
    if (!a || a->dtype() != DType::i64 || !axes.empty()) return nullptr;
    axes.assign(a->data<int64_t>(), a->data<int64_t>() + a->numel());
  }
  const int rank = int(x->shape.size());
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0)) return nullptr;
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<char> red(size_t(rank), 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return nullptr;  // the reference reports the error
    red[size_t(a < 0 ? a + rank : a)] = 1;
  }
  int first = -1, last = -1;
  for (int d = 0; d < rank; ++d)
    if (red[size_t(d)]) {
      if (first < 0)
        first = d;
      else if (last != d - 1)
        return nullptr;  // not one contiguous run
      last = d;
    }
  if (first < 0) return nullptr;
  return std::make_unique<ReduceMeanKernel>(first, last);
}

}  // namespace segmux::cpu
