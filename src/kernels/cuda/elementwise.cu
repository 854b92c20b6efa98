// Element-wise kernels: the Pointwise interpreter (every f32 unary/binary op is a one-step program),
// comparisons, Where, Not and Cast. Grid-stride loops; the broadcast offsets are recomputed per element
// from the output index (the candidates' element-wise ops are memory-bound; vector loads come later).
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_common.cuh"

namespace segmux::cuda {

namespace {

using detail::as_stream;
using detail::block_for;
using detail::grid_for;
using detail::launched;

__device__ float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ float gelu_exact(float x) { return 0.5f * x * erfcf(-x * 0.70710678118654752440f); }

__device__ float apply_unary(Step s, float v, float alpha, float beta) {
  switch (s) {
    case Step::relu:
      return v > 0.f ? v : 0.f;
    case Step::sigmoid:
      return 1.f / (1.f + expf(-v));
    case Step::sqrt:
      return sqrtf(v);
    case Step::abs:
      return fabsf(v);
    case Step::neg:
      return -v;
    case Step::sin:
      return sinf(v);
    case Step::cos:
      return cosf(v);
    case Step::log:
      return logf(v);
    case Step::exp:
      return expf(v);
    case Step::erf:
      return erff(v);
    case Step::sign:
      return v > 0.f ? 1.f : (v < 0.f ? -1.f : v);
    case Step::floor:
      return floorf(v);
    case Step::ceil:
      return ceilf(v);
    case Step::reciprocal:
      return 1.f / v;
    case Step::tanh:
      return tanhf(v);
    case Step::gelu:
      return gelu_exact(v);
    case Step::gelu_round_in:
      return gelu_exact(bf16_round(v));
    case Step::gelu_round_out:
      return bf16_round(gelu_exact(v));
    case Step::gelu_round_both:
      return bf16_round(gelu_exact(bf16_round(v)));
    case Step::clip:
      return fminf(fmaxf(v, alpha), beta);
    case Step::round_bf16:
      return bf16_round(v);
    default:
      return v;
  }
}

__device__ float apply_binary(Step s, float a, float b) {
  switch (s) {
    case Step::add:
      return a + b;
    case Step::sub:
      return a - b;
    case Step::mul:
      return a * b;
    case Step::div:
      return a / b;
    case Step::pow:
      return powf(a, b);
    case Step::max:
      return fmaxf(a, b);
    case Step::min:
      return fminf(a, b);
    default:
      return a;
  }
}

// Offsets of `operands` operands for output element i.
__device__ void broadcast_offsets(const Broadcast& b, int operands, int64_t i, int64_t* off) {
  for (int k = 0; k < operands; ++k) off[k] = 0;
  for (int d = b.rank - 1; d >= 0; --d) {
    const int64_t idx = i % b.out_dims[d];
    i /= b.out_dims[d];
    for (int k = 0; k < operands; ++k) off[k] += idx * b.strides[k][d];
  }
}

struct Operands {
  const float* p[kMaxOperands];
};

__global__ void pointwise_kernel(PointwiseProgram prog, Broadcast b, int operands, Operands in, float* out, int64_t n) {
  int64_t off[kMaxOperands];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    broadcast_offsets(b, operands, i, off);
    float v = in.p[0][off[0]];
    int next = 1;
    for (int s = 0; s < prog.count; ++s) {
      if (int32_t(prog.step[s]) <= int32_t(Step::min)) {  // binary (cuda_api.h)
        const float o = in.p[next][off[next]];
        ++next;
        v = prog.operand_first[s] ? apply_binary(prog.step[s], o, v) : apply_binary(prog.step[s], v, o);
      } else {
        v = apply_unary(prog.step[s], v, prog.alpha, prog.beta);
      }
    }
    out[i] = v;
  }
}

template <typename T>
__device__ bool compare(Compare c, T a, T b) {
  switch (c) {
    case Compare::equal:
      return a == b;
    case Compare::greater:
      return a > b;
    case Compare::less:
      return a < b;
    case Compare::greater_equal:
      return a >= b;
    default:
      return a <= b;
  }
}

template <typename T>
__global__ void compare_kernel(Compare c, Broadcast b, const T* x, const T* y, uint8_t* out, int64_t n) {
  int64_t off[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    broadcast_offsets(b, 2, i, off);
    out[i] = compare(c, x[off[0]], y[off[1]]) ? 1 : 0;
  }
}

template <typename T>
__global__ void int_binary_kernel(Step op, Broadcast b, const T* x, const T* y, T* out, int64_t n) {
  int64_t off[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    broadcast_offsets(b, 2, i, off);
    const T u = x[off[0]], v = y[off[1]];
    switch (op) {
      case Step::add:
        out[i] = u + v;
        break;
      case Step::sub:
        out[i] = u - v;
        break;
      case Step::mul:
        out[i] = u * v;
        break;
      case Step::max:
        out[i] = u > v ? u : v;
        break;
      default:
        out[i] = u < v ? u : v;
        break;
    }
  }
}

template <typename T>
__global__ void where_kernel(Broadcast b, const uint8_t* cond, const T* x, const T* y, T* out, int64_t n) {
  int64_t off[3];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    broadcast_offsets(b, 3, i, off);
    out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

__global__ void not_kernel(const uint8_t* in, uint8_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = in[i] ? 0 : 1;
}

template <typename T>
__device__ double load_as_double(const void* p, int64_t i) {
  return double(static_cast<const T*>(p)[i]);
}

__device__ double load_scalar(ScalarKind k, const void* p, int64_t i) {
  switch (k) {
    case ScalarKind::f32:
      return load_as_double<float>(p, i);
    case ScalarKind::f64:
      return load_as_double<double>(p, i);
    case ScalarKind::i64:
      return load_as_double<long long>(p, i);
    case ScalarKind::i32:
      return load_as_double<int>(p, i);
    case ScalarKind::i8:
      return load_as_double<signed char>(p, i);
    case ScalarKind::u8:
      return load_as_double<unsigned char>(p, i);
    case ScalarKind::boolean:
      return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
    default:
      return double(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
  }
}

__device__ void store_scalar(ScalarKind k, void* p, int64_t i, double v) {
  switch (k) {
    case ScalarKind::f32:
      static_cast<float*>(p)[i] = float(v);
      break;
    case ScalarKind::f64:
      static_cast<double*>(p)[i] = v;
      break;
    case ScalarKind::i64:
      static_cast<long long*>(p)[i] = (long long)(v);
      break;
    case ScalarKind::i32:
      static_cast<int*>(p)[i] = int(v);
      break;
    case ScalarKind::i8:
      static_cast<signed char*>(p)[i] = (signed char)(v);
      break;
    case ScalarKind::u8:
      static_cast<unsigned char*>(p)[i] = (unsigned char)(v);
      break;
    case ScalarKind::boolean:
      static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0;
      break;
    default:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(float(v));
      break;
  }
}

// Through double: exact for every pair the candidates use (f32 <-> bf16 / i64 / bool). An i64 beyond
// 2^53 would round: the candidates' integer tensors are indices and shapes, far below that.
__global__ void cast_kernel(ScalarKind from, ScalarKind to, const void* in, void* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (from == ScalarKind::f32 && to == ScalarKind::bf16)  // direct: f32 -> f64 -> bf16 would double-round
      static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(static_cast<const float*>(in)[i]);
    else
      store_scalar(to, out, i, load_scalar(from, in, i));
  }
}

__global__ void rope_kernel(const float* x, const float* c, const float* sn, float* y, int64_t rows, int64_t len,
                            int64_t half) {
  const int64_t pairs = rows * half;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = p / half, i = p % half, l = r % len;
    const float a = x[2 * p], b = x[2 * p + 1], ci = c[l * half + i], si = sn[l * half + i];
    y[2 * p] = __fsub_rn(__fmul_rn(a, ci), __fmul_rn(b, si));
    y[2 * p + 1] = __fadd_rn(__fmul_rn(a, si), __fmul_rn(b, ci));
  }
}

}  // namespace

Status launch_rope(const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t len,
                   int64_t half, Stream s) {
  if (rows * half == 0) return nullptr;
  rope_kernel<<<grid_for(rows * half), block_for(), 0, as_stream(s)>>>(x, cos, sin, y, rows, len, half);
  return launched("rope kernel");
}

Status launch_pointwise(const PointwiseProgram& program, const Broadcast& b, int operands, const float* const* in,
                        float* out, int64_t n, Stream s) {
  if (n == 0) return nullptr;
  Operands ops{};
  for (int k = 0; k < operands && k < kMaxOperands; ++k) ops.p[k] = in[k];
  pointwise_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(program, b, operands, ops, out, n);
  return launched("pointwise kernel");
}

Status launch_compare(Compare cmp, ScalarKind kind, const Broadcast& b, const void* a, const void* bv, uint8_t* out,
                      int64_t n, Stream s) {
  if (n == 0) return nullptr;
  cudaStream_t st = as_stream(s);
  switch (kind) {
    case ScalarKind::f32:
      compare_kernel<<<grid_for(n), block_for(), 0, st>>>(cmp, b, static_cast<const float*>(a),
                                                          static_cast<const float*>(bv), out, n);
      break;
    case ScalarKind::i64:
      compare_kernel<<<grid_for(n), block_for(), 0, st>>>(cmp, b, static_cast<const long long*>(a),
                                                          static_cast<const long long*>(bv), out, n);
      break;
    case ScalarKind::i32:
      compare_kernel<<<grid_for(n), block_for(), 0, st>>>(cmp, b, static_cast<const int*>(a),
                                                          static_cast<const int*>(bv), out, n);
      break;
    default:
      compare_kernel<<<grid_for(n), block_for(), 0, st>>>(cmp, b, static_cast<const uint8_t*>(a),
                                                          static_cast<const uint8_t*>(bv), out, n);
  }
  return launched("comparison kernel");
}

Status launch_int_binary(Step op, ScalarKind kind, const Broadcast& b, const void* a, const void* bv, void* out,
                         int64_t n, Stream s) {
  if (n == 0) return nullptr;
  if (kind == ScalarKind::i64)
    int_binary_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(
        op, b, static_cast<const long long*>(a), static_cast<const long long*>(bv), static_cast<long long*>(out), n);
  else
    int_binary_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(
        op, b, static_cast<const int*>(a), static_cast<const int*>(bv), static_cast<int*>(out), n);
  return launched("integer binary kernel");
}

Status launch_where(const Broadcast& b, const uint8_t* cond, const void* x, const void* y, void* out, int elem_bytes,
                    int64_t n, Stream s) {
  if (n == 0) return nullptr;
  cudaStream_t st = as_stream(s);
  switch (elem_bytes) {
    case 1:
      where_kernel<<<grid_for(n), block_for(), 0, st>>>(b, cond, static_cast<const uint8_t*>(x),
                                                        static_cast<const uint8_t*>(y), static_cast<uint8_t*>(out), n);
      break;
    case 2:
      where_kernel<<<grid_for(n), block_for(), 0, st>>>(
          b, cond, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y), static_cast<uint16_t*>(out), n);
      break;
    case 4:
      where_kernel<<<grid_for(n), block_for(), 0, st>>>(
          b, cond, static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(y), static_cast<uint32_t*>(out), n);
      break;
    default:
      where_kernel<<<grid_for(n), block_for(), 0, st>>>(
          b, cond, static_cast<const uint64_t*>(x), static_cast<const uint64_t*>(y), static_cast<uint64_t*>(out), n);
  }
  return launched("where kernel");
}

Status launch_not(const uint8_t* in, uint8_t* out, int64_t n, Stream s) {
  if (n == 0) return nullptr;
  not_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(in, out, n);
  return launched("not kernel");
}

Status launch_cast(ScalarKind from, ScalarKind to, const void* in, void* out, int64_t n, Stream s) {
  if (n == 0) return nullptr;
  cast_kernel<<<grid_for(n), block_for(), 0, as_stream(s)>>>(from, to, in, out, n);
  return launched("cast kernel");
}

}  // namespace segmux::cuda
