// Element-wise f32 kernels: the four arithmetic binary ops with numpy broadcasting, and exact GELU
// (optionally with its input / output rounded to bf16 values).
// Broadcasting is reduced to "outer loop x contiguous-or-scalar inner run" after merging dims that
// broadcast the same way, so same-shape, scalar, row and column cases all hit vector inner loops
// (simd.h: the loops of the instruction set chosen when the kernel is created).
#include <cstring>

#include "ir/precision.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu {
namespace {

struct BroadcastLayout {
  std::vector<int64_t> dims, sa, sb;  // merged output dims and the inputs' element strides (0 = broadcast)
};

BroadcastLayout plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  const size_t r = out.size();
  std::vector<int64_t> da(r, 1), db(r, 1);
  for (size_t i = 0; i < a.size(); ++i) da[r - a.size() + i] = a[i];
  for (size_t i = 0; i < b.size(); ++i) db[r - b.size() + i] = b[i];
  std::vector<int64_t> dims, sa, sb;
  int64_t stride_a = 1, stride_b = 1;
  std::vector<int64_t> full_sa(r), full_sb(r);
  for (size_t i = r; i-- > 0;) {
    full_sa[i] = da[i] == 1 ? 0 : stride_a;
    full_sb[i] = db[i] == 1 ? 0 : stride_b;
    stride_a *= da[i];
    stride_b *= db[i];
  }
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    if (!dims.empty() && sa.back() == full_sa[i] * out[i] && sb.back() == full_sb[i] * out[i]) {
      dims.back() *= out[i];
      sa.back() = full_sa[i];
      sb.back() = full_sb[i];
      continue;
    }
    dims.push_back(out[i]);
    sa.push_back(full_sa[i]);
    sb.push_back(full_sb[i]);
  }
  if (dims.empty()) {
    dims = {1};
    sa = {0};
    sb = {0};
  }
  return {dims, sa, sb};
}

void run_binary(BinaryInnerFn inner, const float* a, const float* b, float* out, const BroadcastLayout& L,
                int num_threads) {
  const int64_t n = L.dims.back();
  const int64_t ia = L.sa.back(), ib = L.sb.back();
  const size_t outer_rank = L.dims.size() - 1;
  int64_t outer = 1;
  for (size_t d = 0; d < outer_rank; ++d) outer *= L.dims[d];
  // Work items: (outer row, inner piece); pieces keep every item at least ~16K elements.
  const int64_t piece = std::max<int64_t>(16384, (n + 63) / 64 * 16);
  const int64_t pieces = (n + piece - 1) / piece;
  const int64_t total = outer * pieces;
  int nt = total * n < 32768 ? 1 : num_threads;
  parallel_chunks(total, nt, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      int64_t row = w / pieces, p = w % pieces;
      int64_t oa = 0, ob = 0, rem = row;
      for (size_t d = outer_rank; d-- > 0;) {
        int64_t idx = rem % L.dims[d];
        rem /= L.dims[d];
        oa += idx * L.sa[d];
        ob += idx * L.sb[d];
      }
      int64_t lo = p * piece, len = std::min(piece, n - lo);
      inner(a + oa + lo * ia, ia, b + ob + lo * ib, ib, out + row * n + lo, len);
    }
  });
}

class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(BinaryInnerFn inner) : inner_(inner) {}
  void run(KernelContext& ctx) override {
    const Tensor& a = *ctx.inputs[0];
    const Tensor& b = *ctx.inputs[1];
    Tensor& out = *ctx.outputs[0];
    if (out.numel() == 0) return;
    BroadcastLayout L = plan_broadcast(a.shape(), b.shape(), out.shape());
    run_binary(inner_, a.data<float>(), b.data<float>(), out.data<float>(), L, ctx.num_threads);
  }

 private:
  BinaryInnerFn inner_;
};

// Exact GELU; with the bf16_round_* attributes the input and / or the result rounded to bf16 values
// in the same pass (the graph's Cast pairs folded in by the compiler), block by block in L1.
class GeluKernel : public Kernel {
 public:
  GeluKernel(bool round_input, bool round_output) : round_input_(round_input), round_output_(round_output) {}
  void run(KernelContext& ctx) override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t n = ctx.inputs[0]->numel();
    int nt = n < 32768 ? 1 : ctx.num_threads;
    parallel_chunks((n + kBlock - 1) / kBlock, nt, [&](int64_t b, int64_t e) {
      alignas(64) float rounded[kBlock];
      for (int64_t lo = b * kBlock; lo < std::min(n, e * kBlock); lo += kBlock) {
        const int64_t len = std::min(kBlock, n - lo);
        const float* src = x + lo;
        if (round_input_) {
          round_run_to_bf16(src, rounded, len);
          src = rounded;
        }
        gelu_(src, y + lo, len);
        if (round_output_) round_run_to_bf16(y + lo, y + lo, len);
      }
    });
  }

 private:
  static constexpr int64_t kBlock = 2048;
  bool round_input_, round_output_;
  decltype(EltwiseFns::gelu) gelu_ = eltwise_fns().gelu;
};

bool all_f32(const KernelInit& init) {
  for (auto* t : init.inputs)
    if (!t || t->dtype != DType::f32) return false;
  for (auto& t : init.outputs)
    if (t.dtype != DType::f32) return false;
  return true;
}

}  // namespace

std::unique_ptr<Kernel> make_binary(const KernelInit& init) {
  if (init.inputs.size() != 2 || !all_f32(init)) return nullptr;
  const std::string& t = init.node.op_type;
  const EltwiseFns& f = eltwise_fns();
  if (t == "Add") return std::make_unique<BinaryKernel>(f.add);
  if (t == "Sub") return std::make_unique<BinaryKernel>(f.sub);
  if (t == "Mul") return std::make_unique<BinaryKernel>(f.mul);
  if (t == "Div") return std::make_unique<BinaryKernel>(f.div);
  return nullptr;
}

std::unique_ptr<Kernel> make_gelu(const KernelInit& init) {
  if (init.inputs.size() != 1 || !all_f32(init)) return nullptr;
  return std::make_unique<GeluKernel>(init.node.attr_int(ir::kGeluRoundInput, 0) != 0,
                                      init.node.attr_int(ir::kGeluRoundOutput, 0) != 0);
}

}  // namespace segmux::cpu
