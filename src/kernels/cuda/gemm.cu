// GEMM through cuBLASLt: row-major D = A W (+ bias) (+ C) computed as the column-major D^T = W^T A^T,
// which needs no transposes (W row-major [K, N] is column-major [N, K]). fp32 uses CUBLAS_COMPUTE_32F
// (exact fp32 FMAs), tf32 CUBLAS_COMPUTE_32F_FAST_TF32, bf16 bf16 A/W with f32 accumulate, C and D.
// The bias rides in the epilogue; a residual is C with beta = 1. GELU is not fused: cuBLASLt's GELU
// epilogue is the tanh approximation, SAM's is exact erf (our pointwise kernel runs after).
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "kernels/cuda/cuda_common.cuh"

namespace segmux::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

Status lt_status(cublasStatus_t s, const char* what) {
  return s == CUBLAS_STATUS_SUCCESS ? nullptr : detail::fail_status(what, cublasLtGetStatusString(s));
}

// One handle per process; one workspace per stream (two streams must not share scratch memory).
struct LtContext {
  std::mutex mutex;
  cublasLtHandle_t handle = nullptr;
  std::map<Stream, void*> workspaces;
};

LtContext& lt_context() {
  static LtContext* ctx = new LtContext();  // never destroyed: the driver may be gone at exit
  return *ctx;
}

Status lt_handle_and_workspace(Stream s, cublasLtHandle_t* handle, void** workspace) {
  LtContext& ctx = lt_context();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  if (!ctx.handle)
    if (Status st = lt_status(cublasLtCreate(&ctx.handle), "cublasLtCreate")) return st;
  void*& ws = ctx.workspaces[s];
  if (!ws)
    if (Status st = detail::status_of(cudaMalloc(&ws, kWorkspaceBytes), "cuBLASLt workspace")) return st;
  *handle = ctx.handle;
  *workspace = ws;
  return nullptr;
}

// Owns the descriptors of one call.
struct LtCall {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Status make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch,
                   int64_t stride) {
  if (Status st = lt_status(cublasLtMatrixLayoutCreate(layout, type, uint64_t(rows), uint64_t(cols), rows),
                            "cublasLtMatrixLayoutCreate"))
    return st;
  if (batch <= 1) return nullptr;
  const int32_t count = int32_t(batch);
  if (Status st = lt_status(
          cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          "batch count"))
    return st;
  return lt_status(
      cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
      "batch stride");
}

Status describe(const GemmShape& g, const float* bias, LtCall& call) {
  const cublasComputeType_t compute = g.mode == GemmMode::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (Status st = lt_status(cublasLtMatmulDescCreate(&call.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate"))
    return st;
  if (bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_32F;
    if (Status st = lt_status(
            cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
            "bias epilogue"))
      return st;
    if (Status st = lt_status(cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                             sizeof(bias_type)),
                              "bias type"))
      return st;
    if (Status st =
            lt_status(cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
                      "bias pointer"))
      return st;
  }
  const cudaDataType_t in_type = g.mode == GemmMode::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  // Lt's A = W (column-major [N, K]), B = A (column-major [K, M]), C = D (column-major [N, M]).
  if (Status st = make_layout(&call.a, in_type, g.n, g.k, g.batch, g.stride_w)) return st;
  if (Status st = make_layout(&call.b, in_type, g.k, g.m, g.batch, g.stride_a)) return st;
  return make_layout(&call.c, CUDA_R_32F, g.n, g.m, g.batch, g.stride_d);
}

// The largest power of two (<= 256) dividing the address and, for batched calls, every batch's offset:
// cuBLASLt's heuristics assume 256-byte aligned buffers unless told otherwise, and the arena places
// tensors on 64-byte boundaries only.
uint32_t alignment(const void* p, int64_t batch, int64_t stride_elems, int64_t elem_bytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256u;
  if (batch > 1 && stride_elems != 0) bits |= uint64_t(stride_elems * elem_bytes);
  return uint32_t(bits & (~bits + 1));
}

Status prefer_alignment(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, uint32_t bytes) {
  return lt_status(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof(bytes)), "alignment preference");
}

// What the heuristic's answer depends on: shapes, precision, epilogue, C, and each buffer's alignment.
struct AlgoKey {
  GemmShape g;
  bool bias = false, c = false;
  uint32_t align[4] = {};  // A (= W), B (= the activations), C, D
  auto tie() const {
    return std::make_tuple(g.m, g.n, g.k, g.batch, g.stride_a, g.stride_w, g.stride_d, int(g.mode), bias, c, align[0],
                           align[1], align[2], align[3]);
  }
  bool operator<(const AlgoKey& o) const { return tie() < o.tie(); }
};

// The heuristic's first algorithm, asked once per key (the query costs tens of microseconds, more than
// many of the candidates' GEMMs) and then remembered for the process.
Status choose_algo(cublasLtHandle_t handle, const AlgoKey& key, LtCall& call, cublasLtMatmulAlgo_t* algo) {
  static std::mutex mutex;
  static auto* cache = new std::map<AlgoKey, cublasLtMatmulAlgo_t>();  // never destroyed, like the handle
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache->find(key); it != cache->end()) {
      *algo = it->second;
      return nullptr;
    }
  }
  if (Status st = lt_status(cublasLtMatmulPreferenceCreate(&call.pref), "cublasLtMatmulPreferenceCreate")) return st;
  const size_t ws_bytes = kWorkspaceBytes;
  if (Status st = lt_status(cublasLtMatmulPreferenceSetAttribute(call.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &ws_bytes, sizeof(ws_bytes)),
                            "workspace preference"))
    return st;
  const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    if (Status st = prefer_alignment(call.pref, attrs[i], key.align[i])) return st;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (Status st = lt_status(cublasLtMatmulAlgoGetHeuristic(handle, call.desc, call.a, call.b, call.c, call.c, call.pref,
                                                           1, &result, &found),
                            "cublasLtMatmulAlgoGetHeuristic"))
    return st;
  if (found == 0) return detail::fail_status("cuBLASLt", "no algorithm for this GEMM");
  std::lock_guard<std::mutex> lock(mutex);
  (*cache)[key] = result.algo;
  *algo = result.algo;
  return nullptr;
}

}  // namespace

Status launch_gemm(const GemmShape& g, const void* a, const void* w, const float* bias, const float* c, float* d,
                   Stream s) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return nullptr;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  if (Status st = lt_handle_and_workspace(s, &handle, &workspace)) return st;
  LtCall call;
  if (Status st = describe(g, bias, call)) return st;
  const int64_t in_bytes = g.mode == GemmMode::bf16 ? 2 : 4;
  const void* c_or_d = c ? static_cast<const void*>(c) : d;
  const AlgoKey key{g,
                    bias != nullptr,
                    c != nullptr,
                    {alignment(w, g.batch, g.stride_w, in_bytes), alignment(a, g.batch, g.stride_a, in_bytes),
                     alignment(c_or_d, g.batch, g.stride_d, 4), alignment(d, g.batch, g.stride_d, 4)}};
  cublasLtMatmulAlgo_t algo;
  if (Status st = choose_algo(handle, key, call, &algo)) return st;
  const float alpha = 1.f, beta = c ? 1.f : 0.f;
  return lt_status(cublasLtMatmul(handle, call.desc, &alpha, w, call.a, a, call.b, &beta, c_or_d, call.c, d, call.c,
                                  &algo, workspace, kWorkspaceBytes, detail::as_stream(s)),
                   "cublasLtMatmul");
}

}  // namespace segmux::cuda
