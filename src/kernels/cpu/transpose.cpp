// Transpose for 1/2/4/8-byte elements: dims that stay adjacent are merged; when the innermost input
// dim stays innermost, rows are copied whole; otherwise the two dims that swap with the innermost
// positions are copied in 16x16 tiles (cache-friendly on both sides).
#include <cstring>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"

namespace segmux::cpu {
namespace {

struct TransposeLayout {
  std::vector<int64_t> out_dims;    // merged output dims
  std::vector<int64_t> in_strides;  // input element stride of each output dim
};

TransposeLayout plan_transpose(const Shape& in, const std::vector<int64_t>& perm) {
  const size_t r = in.size();
  std::vector<int64_t> strides(r, 1);
  for (size_t i = r; i-- > 1;) strides[i - 1] = strides[i] * in[i];
  TransposeLayout L;
  for (size_t o = 0; o < r; ++o) {
    int64_t d = in[size_t(perm[o])], s = strides[size_t(perm[o])];
    if (d == 1) continue;
    if (!L.out_dims.empty() && L.in_strides.back() == s * d) {
      L.out_dims.back() *= d;
      L.in_strides.back() = s;
      continue;
    }
    L.out_dims.push_back(d);
    L.in_strides.push_back(s);
  }
  if (L.out_dims.empty()) {
    L.out_dims = {1};
    L.in_strides = {1};
  }
  return L;
}

template <typename T>
void run_transpose(const T* in, T* out, const TransposeLayout& L, int num_threads) {
  const size_t r = L.out_dims.size();
  const int64_t total = [&] {
    int64_t t = 1;
    for (int64_t d : L.out_dims) t *= d;
    return t;
  }();
  const int64_t n_last = L.out_dims.back();
  if (L.in_strides.back() == 1) {
    // Innermost stays innermost: copy runs of n_last.
    const int64_t rows = total / n_last;
    int nt = total < 65536 ? 1 : num_threads;
    parallel_chunks(rows, nt, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t off = 0, rem = row;
        for (size_t d = r - 1; d-- > 0;) {
          off += (rem % L.out_dims[d]) * L.in_strides[d];
          rem /= L.out_dims[d];
        }
        std::memcpy(out + row * n_last, in + off, size_t(n_last) * sizeof(T));
      }
    });
    return;
  }
  // The output dim `a` that reads the input contiguously; tile over (a, last).
  size_t a = 0;
  for (size_t d = 0; d < r; ++d)
    if (L.in_strides[d] == 1) a = d;
  const int64_t na = L.out_dims[a], sl = L.in_strides.back();
  std::vector<int64_t> out_strides(r, 1);
  for (size_t d = r; d-- > 1;) out_strides[d - 1] = out_strides[d] * L.out_dims[d];
  const int64_t oa = out_strides[a];
  const int64_t slices = total / (na * n_last);
  constexpr int64_t B = 16;
  const int64_t ta = (na + B - 1) / B, tl = (n_last + B - 1) / B;
  int nt = total < 65536 ? 1 : num_threads;
  parallel_chunks(slices * ta, nt, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t slice = w / ta, ia0 = (w % ta) * B;
      int64_t in_off = 0, out_off = 0, rem = slice;
      for (size_t d = r - 1; d-- > 0;) {
        if (d == a) continue;
        int64_t idx = rem % L.out_dims[d];
        rem /= L.out_dims[d];
        in_off += idx * L.in_strides[d];
        out_off += idx * out_strides[d];
      }
      const int64_t ia1 = std::min(na, ia0 + B);
      for (int64_t t = 0; t < tl; ++t) {
        const int64_t il0 = t * B, il1 = std::min(n_last, il0 + B);
        for (int64_t ia = ia0; ia < ia1; ++ia) {
          const T* src = in + in_off + ia;
          T* dst = out + out_off + ia * oa;
          for (int64_t il = il0; il < il1; ++il) dst[il] = src[il * sl];
        }
      }
    }
  });
}

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(std::vector<int64_t> perm) : perm_(std::move(perm)) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    const int r = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int d = r - 1; d >= 0; --d) perm.push_back(d);
    SEGMUX_CHECK(int(perm.size()) == r, ctx.node.describe(), ": perm has ", perm.size(), " entries for rank ", r);
    if (x.numel() == 0) return;
    TransposeLayout L = plan_transpose(x.shape(), perm);
    switch (dtype_size(x.dtype())) {
      case 1:
        run_transpose(static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(y.raw()), L, ctx.num_threads);
        break;
      case 2:
        run_transpose(static_cast<const uint16_t*>(x.raw()), static_cast<uint16_t*>(y.raw()), L, ctx.num_threads);
        break;
      case 4:
        run_transpose(static_cast<const uint32_t*>(x.raw()), static_cast<uint32_t*>(y.raw()), L, ctx.num_threads);
        break;
      default:
        run_transpose(static_cast<const uint64_t*>(x.raw()), static_cast<uint64_t*>(y.raw()), L, ctx.num_threads);
        break;
    }
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

std::unique_ptr<Kernel> make_transpose(const KernelInit& init) {
  if (init.inputs.size() != 1 || !init.inputs[0] || init.inputs[0]->dtype == DType::boolean) return nullptr;
  size_t es = dtype_size(init.inputs[0]->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8) return nullptr;
  std::vector<int64_t> perm = init.node.attr_ints("perm");
  // A perm that is not a permutation is the reference kernel's (and the schema's) error to report.
  std::vector<char> seen(perm.size(), 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[size_t(p)]) return nullptr;
    seen[size_t(p)] = 1;
  }
  return std::make_unique<TransposeKernel>(std::move(perm));
}

}  // namespace segmux::cpu
