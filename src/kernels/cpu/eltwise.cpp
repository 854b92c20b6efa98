// Element-wise f32 kernels: the four arithmetic binary ops with numpy broadcasting, exact GELU
// (optionally with its input / output rounded to bf16 values), fused Pointwise chains; and Expand.
// Broadcasting is reduced to "outer loop x contiguous-or-scalar inner run" after merging dims that
// broadcast the same way, so same-shape, scalar, row and column cases all hit vector inner loops
// (simd.h: the loops of the instruction set chosen when the kernel is created).
#include <cstring>

#include "ir/pointwise.h"
#include "ir/precision.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd.h"

namespace segmux::cpu {
namespace {

// Operands broadcast (numpy rules) to `out`, as merged output dims and each operand's element strides
// (0 = broadcast). Adjacent dims merge where every operand agrees, so scalar, row, column and per-channel
// operands all end in one long inner run.
struct BroadcastLayout {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

BroadcastLayout plan_broadcast(const std::vector<Shape>& operands, const Shape& out) {
  const size_t r = out.size(), k = operands.size();
  std::vector<std::vector<int64_t>> full(k, std::vector<int64_t>(r, 0));
  for (size_t j = 0; j < k; ++j) {
    const Shape& s = operands[j];
    int64_t stride = 1;
    for (size_t i = r; i-- > 0;) {
      const size_t from_end = r - 1 - i;
      const int64_t d = from_end < s.size() ? s[s.size() - 1 - from_end] : 1;
      full[j][i] = d == 1 ? 0 : stride;
      stride *= d;
    }
  }
  BroadcastLayout L;
  L.strides.assign(k, {});
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    bool merge = !L.dims.empty();
    for (size_t j = 0; j < k && merge; ++j) merge = L.strides[j].back() == full[j][i] * out[i];
    if (merge) {
      L.dims.back() *= out[i];
      for (size_t j = 0; j < k; ++j) L.strides[j].back() = full[j][i];
      continue;
    }
    L.dims.push_back(out[i]);
    for (size_t j = 0; j < k; ++j) L.strides[j].push_back(full[j][i]);
  }
  if (L.dims.empty()) {
    L.dims = {1};
    for (auto& st : L.strides) st = {0};
  }
  return L;
}

// Runs fn(row offsets per operand, output offset, inner length) over the layout's rows, each cut into
// pieces of at least ~16K elements, on the threads. A chunk finds its first row's offsets by division and
// steps through the next rows as an odometer: with short inner runs (the detector's box bias adds rows of
// 8), dividing per row cost more than the adds.
template <typename Fn>
void for_each_run(const BroadcastLayout& L, int num_threads, Fn&& fn) {
  const int64_t n = L.dims.back();
  const size_t outer_rank = L.dims.size() - 1, k = L.strides.size();
  int64_t outer = 1;
  for (size_t d = 0; d < outer_rank; ++d) outer *= L.dims[d];
  const int64_t piece = std::max<int64_t>(16384, (n + 63) / 64 * 16);
  const int64_t pieces = (n + piece - 1) / piece;
  const int64_t total = outer * pieces;
  const int nt = total * n < 32768 ? 1 : num_threads;
  parallel_chunks(total, nt, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(outer_rank), row_off(k, 0), offsets(k);
    int64_t row = begin / pieces, p = begin % pieces;
    for (size_t d = outer_rank, rem = size_t(row); d-- > 0;) {
      idx[d] = int64_t(rem) % L.dims[d];
      rem /= size_t(L.dims[d]);
      for (size_t j = 0; j < k; ++j) row_off[j] += idx[d] * L.strides[j][d];
    }
    for (int64_t w = begin; w < end; ++w) {
      const int64_t lo = p * piece;
      for (size_t j = 0; j < k; ++j) offsets[j] = row_off[j] + lo * L.strides[j].back();
      fn(offsets, row * n + lo, std::min(piece, n - lo));
      if (++p < pieces) continue;
      p = 0;
      ++row;
      for (size_t d = outer_rank; d-- > 0;) {  // next row: the last outer dim first, carrying
        for (size_t j = 0; j < k; ++j) row_off[j] += L.strides[j][d];
        if (++idx[d] < L.dims[d]) break;
        for (size_t j = 0; j < k; ++j) row_off[j] -= idx[d] * L.strides[j][d];
        idx[d] = 0;
      }
    }
  });
}

void run_binary(BinaryInnerFn inner, const float* a, const float* b, float* out, const BroadcastLayout& L,
                int num_threads) {
  const int64_t ia = L.strides[0].back(), ib = L.strides[1].back();
  for_each_run(L, num_threads, [&](const std::vector<int64_t>& off, int64_t out_off, int64_t len) {
    inner(a + off[0], ia, b + off[1], ib, out + out_off, len);
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
    BroadcastLayout L = plan_broadcast({a.shape(), b.shape()}, out.shape());
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

// segmux Pointwise: each piece of a row goes through every step in L1-sized blocks, through the same
// inner loops the single-op kernels use, so results are theirs bit for bit.
class PointwiseKernel : public Kernel {
 public:
  explicit PointwiseKernel(std::vector<ir::PointwiseStep> steps) : steps_(std::move(steps)) {}

  void run(KernelContext& ctx) override {
    Tensor& y = *ctx.outputs[0];
    SEGMUX_CHECK(ctx.inputs[0]->shape() == y.shape(), ctx.node.describe(), ": input ",
                 shape_str(ctx.inputs[0]->shape()), " is not of the output's shape ", shape_str(y.shape()));
    if (y.numel() == 0) return;
    std::vector<Shape> shapes;
    std::vector<const float*> data;
    for (const Tensor* t : ctx.inputs) {
      shapes.push_back(t->shape());
      data.push_back(t->data<float>());
    }
    const BroadcastLayout L = plan_broadcast(shapes, y.shape());
    float* out = y.data<float>();
    for_each_run(L, ctx.num_threads, [&](const std::vector<int64_t>& off, int64_t out_off, int64_t len) {
      alignas(64) float buffers[2][kBlock];
      for (int64_t lo = 0; lo < len; lo += kBlock) {
        const int64_t n = std::min(kBlock, len - lo);
        const float* value = data[0] + off[0] + lo;
        size_t operand = 0;
        for (size_t s = 0; s < steps_.size(); ++s) {
          // Unary loops may not write over their input, so steps alternate between two buffers.
          float* dst = s + 1 == steps_.size() ? out + out_off + lo : buffers[s % 2];
          apply(steps_[s], value, L, data, off, lo, &operand, dst, n);
          value = dst;
        }
      }
    });
  }

 private:
  static constexpr int64_t kBlock = 2048;

  // One step on n values of the running value (contiguous: input 0 has the output's shape).
  void apply(const ir::PointwiseStep& step, const float* value, const BroadcastLayout& L,
             const std::vector<const float*>& data, const std::vector<int64_t>& off, int64_t lo, size_t* operand,
             float* dst, int64_t n) const {
    switch (step.op) {
      case ir::PointwiseOp::sigmoid:
        return fns_.sigmoid(value, dst, n);
      case ir::PointwiseOp::relu:
        for (int64_t i = 0; i < n; ++i) dst[i] = value[i] > 0 ? value[i] : 0.f;
        return;
      default:
        break;
    }
    const size_t j = ++*operand;
    const int64_t stride = L.strides[j].back();
    const float* b = data[j] + off[j] + lo * stride;
    const BinaryInnerFn inner = step.op == ir::PointwiseOp::add   ? fns_.add
                                : step.op == ir::PointwiseOp::sub ? fns_.sub
                                : step.op == ir::PointwiseOp::mul ? fns_.mul
                                                                  : fns_.div;
    if (step.operand_first)
      inner(b, stride, value, 1, dst, n);
    else
      inner(value, 1, b, stride, dst, n);
  }

  std::vector<ir::PointwiseStep> steps_;
  const EltwiseFns& fns_ = eltwise_fns();
};

// Expand (any dtype) as broadcast runs: a contiguous run is one copy, a broadcast one a fill.
class ExpandKernel : public Kernel {
 public:
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    if (y.numel() == 0) return;
    const size_t es = dtype_size(y.dtype());
    const BroadcastLayout L = plan_broadcast({x.shape()}, y.shape());
    const std::byte* src = static_cast<const std::byte*>(x.raw());
    std::byte* dst = static_cast<std::byte*>(y.raw());
    for_each_run(L, ctx.num_threads, [&](const std::vector<int64_t>& off, int64_t out_off, int64_t len) {
      std::byte* d = dst + size_t(out_off) * es;
      const std::byte* s = src + size_t(off[0]) * es;
      if (L.strides[0].back() != 0) return void(std::memcpy(d, s, size_t(len) * es));
      switch (es) {
        case 4:
          return fill_run<uint32_t>(s, d, len);
        case 8:
          return fill_run<uint64_t>(s, d, len);
        case 2:
          return fill_run<uint16_t>(s, d, len);
        default:
          for (int64_t i = 0; i < len; ++i) std::memcpy(d + size_t(i) * es, s, es);
      }
    });
  }

 private:
  template <typename T>
  static void fill_run(const std::byte* value, std::byte* out, int64_t n) {
    T v;
    std::memcpy(&v, value, sizeof v);
    std::fill_n(reinterpret_cast<T*>(out), n, v);
  }
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

std::unique_ptr<Kernel> make_pointwise(const KernelInit& init) {
  std::vector<ir::PointwiseStep> steps;
  std::string error;
  if (!all_f32(init) || !ir::parse_pointwise_steps(init.node.attr_string(ir::kPointwiseSteps, ""), &steps, &error))
    return nullptr;
  return std::make_unique<PointwiseKernel>(std::move(steps));
}

std::unique_ptr<Kernel> make_expand(const KernelInit& init) {
  if (init.inputs.empty() || !init.inputs[0] || init.outputs.empty() || init.inputs[0]->dtype != init.outputs[0].dtype)
    return nullptr;
  return std::make_unique<ExpandKernel>();
}

std::unique_ptr<Kernel> make_gelu(const KernelInit& init) {
  if (init.inputs.size() != 1 || !all_f32(init)) return nullptr;
  return std::make_unique<GeluKernel>(init.node.attr_int(ir::kGeluRoundInput, 0) != 0,
                                      init.node.attr_int(ir::kGeluRoundOutput, 0) != 0);
}

}  // namespace segmux::cpu
