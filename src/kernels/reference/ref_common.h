// Helpers shared by the reference kernels: dtype dispatch, the 16-bit-float upcast wrapper,
// broadcasting iteration, reading small integer inputs. Plain code; clarity over speed.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernel.h"

namespace segmux::ref {

// Throws "node 'x' (Op): ..." for the kernel's node.
template <typename... Parts>
[[noreturn]] void kfail(const KernelContext& ctx, const Parts&... parts) {
  fail(ctx.node.describe(), ": ", parts...);
}

// Input i (throws naming the node when it is omitted).
const Tensor& in(const KernelContext& ctx, size_t i);
inline bool has_in(const KernelContext& ctx, size_t i) {
  return i < ctx.inputs.size() && ctx.inputs[i] != nullptr && ctx.inputs[i]->defined();
}
// Output k, which must be allocated (has a known shape) unless `allow_unset`.
Tensor& out(const KernelContext& ctx, size_t k);
inline bool wants_out(const KernelContext& ctx, size_t k) {
  return k < ctx.outputs.size() && ctx.outputs[k] != nullptr && ctx.node.outputs.size() > k && ctx.node.outputs[k] >= 0;
}

// Integer values of an i64/i32 tensor.
std::vector<int64_t> ints_of(const KernelContext& ctx, const Tensor& t);
// Values of any numeric tensor as doubles.
std::vector<double> doubles_of(const Tensor& t);

// Calls f(T{}) with T the C++ type of dt. f16/bf16 are rejected (kernels are wrapped by
// upcast16 which turns them into f32 first).
template <typename F>
void dispatch(const KernelContext& ctx, DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(float{});
      return;
    case DType::f64:
      f(double{});
      return;
    case DType::i64:
      f(int64_t{});
      return;
    case DType::i32:
      f(int32_t{});
      return;
    case DType::i8:
      f(int8_t{});
      return;
    case DType::u8:
      f(uint8_t{});
      return;
    case DType::boolean:
      f(bool{});
      return;
    default:
      kfail(ctx, "dtype ", dtype_name(dt), " is not supported here");
  }
}
// Float types only (f32, f64).
template <typename F>
void dispatch_float(const KernelContext& ctx, DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(float{});
      return;
    case DType::f64:
      f(double{});
      return;
    default:
      kfail(ctx, "dtype ", dtype_name(dt), " is not supported (needs a float type)");
  }
}
// Numeric types (no bool).
template <typename F>
void dispatch_numeric(const KernelContext& ctx, DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(float{});
      return;
    case DType::f64:
      f(double{});
      return;
    case DType::i64:
      f(int64_t{});
      return;
    case DType::i32:
      f(int32_t{});
      return;
    case DType::i8:
      f(int8_t{});
      return;
    case DType::u8:
      f(uint8_t{});
      return;
    default:
      kfail(ctx, "dtype ", dtype_name(dt), " is not supported here");
  }
}

// Wraps a kernel so that f16/bf16 inputs arrive as f32 and f16/bf16 outputs are computed in f32
// and rounded (to nearest even) on the way out — the reference semantics for 16-bit floats.
KernelFn upcast16(KernelFn fn);
// Registers fn (wrapped by upcast16) for the default domain.
void reg(const std::string& op, KernelFn fn);

// Broadcast strides (in elements) of `in` viewed as `out` (0 along broadcast axes).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls fn(out_index, offsets) for every output element in order, offsets[j] being the element
// offset into input j (shapes[j] broadcast to out).
template <size_t N, typename F>
void for_each_broadcast(const Shape& out, const std::array<Shape, N>& shapes, F&& fn) {
  const int64_t total = shape_numel(out);
  if (total == 0) return;
  bool same = true;
  for (auto& s : shapes) same = same && s == out;
  std::array<int64_t, N> off{};
  if (same) {
    for (int64_t i = 0; i < total; ++i) {
      off.fill(i);
      fn(i, off);
    }
    return;
  }
  const size_t r = out.size();
  if (r == 0) {
    fn(0, off);
    return;
  }
  std::array<std::vector<int64_t>, N> st;
  for (size_t j = 0; j < N; ++j) st[j] = broadcast_strides(shapes[j], out);
  const int64_t inner = out[r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t k = 0; k < inner; ++k) {
      for (size_t j = 0; j < N; ++j) off[j] = base[j] + k * st[j][r - 1];
      fn(o + k, off);
    }
    // Advance the odometer over the outer dims.
    for (size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      for (size_t j = 0; j < N; ++j) base[j] += st[j][d];
      if (idx[d] < out[d]) break;
      for (size_t j = 0; j < N; ++j) base[j] -= st[j][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Float -> integer conversion without undefined behaviour: NaN -> 0, out of range saturates.
template <typename D, typename S>
D saturate_cast(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (std::is_floating_point_v<D>) {
    return D(v);
  } else if constexpr (std::is_floating_point_v<S>) {
    if (std::isnan(v)) return D(0);
    if (v <= S(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (v >= S(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return D(v);
  } else {
    return D(v);  // integer -> integer wraps (defined in C++20)
  }
}

// Normalises an axis against a rank, throwing a node-named error when out of range.
int64_t axis_of(const KernelContext& ctx, int64_t axis, int64_t rank);

}  // namespace segmux::ref

namespace segmux::ref {

// Calls fn(idx, linear) for every multi-index of shape s in row-major order.
template <typename F>
void for_each_index(const Shape& s, F&& fn) {
  const int64_t total = shape_numel(s);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(static_cast<const std::vector<int64_t>&>(idx), i);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

// Copies element `from` of x to element `to` of y (same dtype), byte-wise.
inline void copy_elem(const Tensor& x, int64_t from, Tensor& y, int64_t to) {
  const size_t es = dtype_size(x.dtype());
  std::memcpy(static_cast<std::byte*>(y.raw()) + size_t(to) * es,
              static_cast<const std::byte*>(x.raw()) + size_t(from) * es, es);
}

// Registers fn for the default domain without the 16-bit upcast (byte-moving kernels).
inline void reg_bytes(const std::string& op, KernelFn fn) { register_reference_kernel_fn("", op, std::move(fn)); }

// Spatial dims padded to 3 (D, H, W) with leading 1s so one loop nest serves 1-D, 2-D and 3-D.
struct Geo3 {
  int64_t in[3], out[3], k[3], s[3], d[3], p[3];
};

inline Geo3 geo3(const Shape& x, const Shape& y, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                 const std::vector<int64_t>& pad_begin) {
  Geo3 g;
  const size_t r = kernel.size(), lead = 3 - r;
  for (size_t i = 0; i < 3; ++i) {
    if (i < lead) {
      g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1;
      g.p[i] = 0;
      continue;
    }
    const size_t j = i - lead;
    g.in[i] = x[j + 2];
    g.out[i] = y[j + 2];
    g.k[i] = kernel[j];
    g.s[i] = strides[j];
    g.d[i] = dilations[j];
    g.p[i] = pad_begin[j];
  }
  return g;
}

// First and one-past-last output index o with 0 <= o*s + off < in.
inline void valid_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t* lo, int64_t* hi) {
  int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t b = in - 1 - off < 0 ? 0 : (in - 1 - off) / s + 1;
  *lo = std::min(a, out);
  *hi = std::clamp(b, *lo, out);
}

// Shared by the integer/quantized variants (linalg.cpp): MatMul with numpy broadcasting, and Conv
// (attributes read from ctx.node) with an optional bias; Y must be allocated with the output shape.
void matmul_forward(const KernelContext& ctx, const Tensor& A, const Tensor& B, Tensor& Y);
void conv_forward(const KernelContext& ctx, const Tensor& X, const Tensor& W, const Tensor* B, Tensor& Y);

// y (contiguous, shape = y.shape()) gets x[base + sum_d idx[d] * x_strides[d]] for every index:
// the copy behind Transpose, Slice, Expand. Element strides; byte-wise, any dtype.
void strided_gather(const Tensor& x, int64_t base, const std::vector<int64_t>& x_strides, Tensor& y);

}  // namespace segmux::ref
