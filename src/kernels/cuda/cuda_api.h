// The CUDA backend's device interface: plain C++ declarations (no CUDA header), implemented in the
// .cu files of this folder (library segmux_kernels_cuda, built when SEGMUX_CUDA finds the toolkit) or,
// in a build without CUDA, by cuda_absent.cpp where every call reports that the backend is missing.
// Every function returns a Status: nullptr on success, else a message (valid until the next call on
// the same thread). Callers turn it into a segmux::Error with check_cuda() (cuda_check.h).
// Kernels take raw device pointers and sizes the host code computed; they never see a Tensor.
#pragma once
#include <cstddef>
#include <cstdint>

namespace segmux::cuda {

using Status = const char*;
using Stream = void*;  // a cudaStream_t

constexpr int kMaxRank = 8;      // tensors of the candidates have rank <= 6
constexpr int kMaxOperands = 8;  // inputs of one Pointwise chain (value + operands)
constexpr int kMaxSteps = 16;    // steps of one Pointwise chain

// True when this build holds the CUDA kernels (SEGMUX_CUDA found the toolkit).
bool backend_compiled();

// ---- device, memory, stream (device.cu) ----
Status device_count(int* count);                                    // 0 devices is a success with *count = 0
Status device_describe(int device, char* text, size_t text_bytes);  // "NVIDIA H200, sm_90, 132 SMs, 141 GiB"
Status device_versions(char* text, size_t text_bytes);              // runtime/driver/cuBLASLt/cuDNN versions
Status set_device(int device);
Status device_malloc(void** ptr, size_t bytes);
Status device_free(void* ptr);
Status copy_to_device(void* dst, const void* src, size_t bytes, Stream s);
Status copy_to_host(void* dst, const void* src, size_t bytes, Stream s);
Status copy_on_device(void* dst, const void* src, size_t bytes, Stream s);
Status fill_bytes(void* dst, int byte, size_t bytes, Stream s);
Status stream_create(Stream* s);
Status stream_destroy(Stream s);
Status stream_sync(Stream s);

// ---- element-wise (elementwise.cu) ----
// Broadcast addressing: the output is contiguous with dims out_dims[0..rank); operand k is read at
// sum_d index_d * strides[k][d] (0 where it broadcasts).
struct Broadcast {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t strides[kMaxOperands][kMaxRank] = {};
};

// f32 steps; unary steps ignore operands. gelu_* are the exact-erf GELU with bf16 rounding of the
// input and/or output (segmux Gelu's attributes); clip uses alpha/beta as min/max.
enum class Step : int32_t {
  add,
  sub,
  mul,
  div,
  pow,
  max,
  min,  // binary (take the next operand)
  relu,
  sigmoid,
  sqrt,
  abs,
  neg,
  sin,
  cos,
  log,
  exp,
  erf,
  sign,
  floor,
  ceil,
  reciprocal,
  tanh,
  gelu,
  gelu_round_in,
  gelu_round_out,
  gelu_round_both,
  clip,
  round_bf16
};

struct PointwiseProgram {
  int count = 0;
  Step step[kMaxSteps] = {};
  int8_t operand_first[kMaxSteps] = {};  // binary: operand op value (".r")
  float alpha = 0.f, beta = 0.f;         // clip bounds
};

// out = program(in[0], in[1], ...) over the broadcast; every operand f32.
Status launch_pointwise(const PointwiseProgram& program, const Broadcast& b, int operands, const float* const* in,
                        float* out, int64_t n, Stream s);

enum class Compare : int32_t { equal, greater, less, greater_equal, less_equal };
enum class ScalarKind : int32_t { f32, i64, i32, boolean, bf16, u8, i8, f64 };
// Integer Add/Sub/Mul/Max/Min (Step::add ... Step::min, no div/pow) over the broadcast; kind i64 or i32.
Status launch_int_binary(Step op, ScalarKind kind, const Broadcast& b, const void* a, const void* bv, void* out,
                         int64_t n, Stream s);
// out (bool bytes) = a cmp b, both of `kind` (f32, i64, i32 or boolean).
Status launch_compare(Compare cmp, ScalarKind kind, const Broadcast& b, const void* a, const void* bv, uint8_t* out,
                      int64_t n, Stream s);
// out = cond ? x : y, elements of elem_bytes (1, 2, 4 or 8); operands 0..2 = cond, x, y.
Status launch_where(const Broadcast& b, const uint8_t* cond, const void* x, const void* y, void* out, int elem_bytes,
                    int64_t n, Stream s);
Status launch_not(const uint8_t* in, uint8_t* out, int64_t n, Stream s);
// Element-wise conversion; floats round to nearest even (as Tensor::cast), float -> int truncates.
Status launch_cast(ScalarKind from, ScalarKind to, const void* in, void* out, int64_t n, Stream s);

// ---- data movement (movement.cu) ----
// out[out_base + sum index_d * out_strides[d]] = in[in_base + sum index_d * in_strides[d]] over dims; in
// elements. Transpose, Slice, Expand and Concat/Split pieces are all this one copy.
struct StridedCopy {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t out_strides[kMaxRank] = {};
  int64_t in_base = 0, out_base = 0;
};
Status launch_strided_copy(const StridedCopy& c, const void* in, void* out, int elem_bytes, Stream s);
// out[o, j, i] = in[o, idx[j], i] (idx i64, negative counts from the end; out of range -> error flag).
Status launch_gather(const void* in, const int64_t* indices, void* out, int64_t outer, int64_t axis_len, int64_t count,
                     int64_t inner, int elem_bytes, Stream s);

// out[i] = in[(index over the output dims, with dim `axis` replaced by idx[i])] (GatherElements: idx i64
// of the output's shape, negative counts from the end, out of range reads element 0 of that axis).
struct GatherElements {
  int rank = 0, axis = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t axis_len = 0;
};
Status launch_gather_elements(const GatherElements& g, const void* in, const int64_t* indices, void* out,
                              int elem_bytes, Stream s);
// out[o] = in[sum_d table[offset_d + o_d] * in_strides[d]] over the output dims: per-axis index tables
// (nearest-neighbour Resize), all axes' tables concatenated in one device buffer.
struct AxisGather {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t table_offset[kMaxRank] = {};
};
Status launch_axis_gather(const AxisGather& g, const void* in, const int64_t* tables, void* out, int elem_bytes,
                          Stream s);
// RoiAlign (opset 16) in double, as the reference: x [n, c, h, w], rois [r, 4] (x0, y0, x1, y1), batch
// indices [r] (validated on the host), y [r, c, ph, pw].
struct RoiAlignShape {
  int64_t n = 0, c = 0, h = 0, w = 0, rois = 0, ph = 1, pw = 1, ratio = 0;
  double spatial_scale = 1;
  bool half_pixel = true, is_max = false;
};
Status launch_roi_align(const RoiAlignShape& a, const float* x, const float* rois, const int64_t* batch, float* y,
                        Stream s);
// Convolution patches: col[g][p][(c * kh + i) * kw + j] = x[n, g * c_per_group + c, oh * sh - ph + i * dh,
// ow * sw - pw + j * dw] (0 outside the image), p = (n * oh + y) * ow + x; x addressed through its strides
// (NCHW or NHWC alike).
struct Im2Col {
  int64_t n = 0, c_per_group = 0, groups = 1, h = 0, w = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t xs_n = 0, xs_c = 0, xs_h = 0, xs_w = 0;
};
Status launch_im2col(const Im2Col& c, const float* x, float* col, Stream s);
// Rotary embedding on interleaved pairs (segmux Rope): x [rows, D] with row r at position r % len,
// cos/sin [len, D/2]; each product rounded on its own, as the unfused graph does (no FMA).
Status launch_rope(const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t len,
                   int64_t half, Stream s);

// ---- reductions and normalisations (norms.cu) ----
// Rows of `cols` contiguous values: y = (x - mean) / sqrt(var + eps) * scale + bias (scale/bias [cols],
// bias may be null).
Status launch_layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                         float eps, Stream s);
// x [N, C, spatial...]: statistics per (n, group) over (C/groups) * spatial values.
Status launch_group_norm(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t c,
                         int64_t spatial, int64_t groups, float eps, Stream s);
Status launch_softmax(const float* x, float* y, int64_t rows, int64_t cols, Stream s);
enum class Reduce : int32_t { sum, mean, max };
// x viewed as [outer, len, inner]: y[o, i] = reduce_j x[o, j, i].
Status launch_reduce(Reduce r, const float* x, float* y, int64_t outer, int64_t len, int64_t inner, Stream s);
// y[o, i] = the index j of the largest x[o, j, i] (the first one, or the last with select_last).
Status launch_argmax(const float* x, int64_t* y, int64_t outer, int64_t len, int64_t inner, bool select_last, Stream s);

// ---- attention (attention.cu) ----
// q [B, Lq, D], k [B, Lk, D], v [B, Lk, Dv] (B = the flattened leading dims), out [B, Lq, Dv]; optional
// mask addressed as mask_base(b, i) + j * mask_stride_j with mask_base from the leading-dim strides.
struct AttentionShape {
  int64_t batch = 0, lq = 0, lk = 0, d = 0, dv = 0;
  float scale = 1.f;
  int lead_rank = 0;                 // leading dims of q (batch = their product)
  int64_t lead_dims[kMaxRank] = {};  //
  int64_t mask_lead[kMaxRank] = {};  // mask stride per leading dim (0 = broadcast)
  int64_t mask_i = 0, mask_j = 0;    // mask strides of the query and key index
  int mask_kind = 0;                 // 0 none, 1 f32 additive, 2 bool (nonzero = attend)
};
constexpr int kAttentionMaxHead = 256;  // head sizes D, Dv the kernel takes
Status launch_attention(const AttentionShape& a, const float* q, const float* k, const float* v, const void* mask,
                        float* out, Stream s);

// ---- GEMM (gemm.cu, cuBLASLt) ----
enum class GemmMode : int32_t { fp32, tf32, bf16 };
// Row-major D[M, N] = A[M, K] W[K, N] (+ bias[N]) (+ C[M, N] with beta = 1 when c != null), `batch`
// times with the given element strides (0 = shared). bf16 mode: a and w hold bf16 values, c/d f32.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t stride_a = 0, stride_w = 0, stride_d = 0;
  GemmMode mode = GemmMode::fp32;
};
Status launch_gemm(const GemmShape& g, const void* a, const void* w, const float* bias, const float* c, float* d,
                   Stream s);

}  // namespace segmux::cuda
