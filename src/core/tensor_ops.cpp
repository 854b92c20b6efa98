#include "core/tensor_ops.h"

#include <cstring>

#include "core/error.h"

namespace segmux {

Tensor as_f32(const Tensor& t) { return t.dtype() == DType::f32 ? t : t.cast(DType::f32); }

Tensor round_to_bf16(const Tensor& t) { return as_f32(t).cast(DType::bf16).cast(DType::f32); }

Tensor take(const Tensor& t, int axis, int64_t start, int64_t count) {
  SEGMUX_CHECK(axis >= 0 && axis < t.rank(), "take: axis ", axis, " out of range for ", shape_str(t.shape()));
  SEGMUX_CHECK(start >= 0 && count >= 0 && start + count <= t.dim(axis), "take: entries ", start, "..", start + count,
               " out of range for axis ", axis, " of ", shape_str(t.shape()));
  Shape s = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (int i = axis + 1; i < t.rank(); ++i) inner *= s[size_t(i)];
  const size_t es = dtype_size(t.dtype());
  const int64_t n = s[size_t(axis)];
  s[size_t(axis)] = count;
  Tensor r(t.dtype(), s);
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(r.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + size_t(o * count * inner) * es, src + size_t((o * n + start) * inner) * es,
                size_t(count * inner) * es);
  return r;
}

Tensor take_indices(const Tensor& t, int axis, const std::vector<int64_t>& indices) {
  SEGMUX_CHECK(axis >= 0 && axis < t.rank(), "take_indices: axis ", axis, " out of range for ", shape_str(t.shape()));
  Shape s = t.shape();
  s[size_t(axis)] = int64_t(indices.size());
  Tensor r(t.dtype(), s);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= t.dim(i);
  for (int i = axis + 1; i < t.rank(); ++i) inner *= t.dim(i);
  const size_t es = dtype_size(t.dtype());
  const int64_t n = t.dim(axis), k = int64_t(indices.size());
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(r.raw());
  for (int64_t j = 0; j < k; ++j)
    SEGMUX_CHECK(indices[size_t(j)] >= 0 && indices[size_t(j)] < n, "take_indices: index ", indices[size_t(j)],
                 " out of range for axis ", axis, " of ", shape_str(t.shape()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(dst + size_t((o * k + j) * inner) * es, src + size_t((o * n + indices[size_t(j)]) * inner) * es,
                  size_t(inner) * es);
  return r;
}

Tensor permute(const Tensor& t, const std::vector<int>& perm) {
  const int r = t.rank();
  SEGMUX_CHECK(int(perm.size()) == r, "permute: ", perm.size(), " axes for a rank-", r, " tensor");
  Shape out(static_cast<size_t>(r), 0);
  for (int i = 0; i < r; ++i) out[size_t(i)] = t.dim(perm[size_t(i)]);
  std::vector<int64_t> in_stride(size_t(r), 1);
  for (int i = r - 2; i >= 0; --i) in_stride[size_t(i)] = in_stride[size_t(i + 1)] * t.dim(i + 1);
  Tensor o(t.dtype(), out);
  const size_t es = dtype_size(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(o.raw());
  std::vector<int64_t> idx(size_t(r), 0);
  for (int64_t k = 0; k < o.numel(); ++k) {
    int64_t off = 0;
    for (int i = 0; i < r; ++i) off += idx[size_t(i)] * in_stride[size_t(perm[size_t(i)])];
    std::memcpy(dst + size_t(k) * es, src + size_t(off) * es, es);
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[size_t(i)] < out[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
  }
  return o;
}

}  // namespace segmux
