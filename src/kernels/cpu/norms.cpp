// Row-wise f32 kernels with AVX-512: Softmax (any axis), LayerNormalization, segmux GroupNorm.
// Statistics use two passes (mean, then squared deviations) in f32 with 16-lane partial sums, which
// keeps them as accurate as the reference's sequential double-free loops or better.
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"

namespace segmux::cpu {
namespace {

float row_max(const float* x, int64_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
  if (i < n) m = _mm512_mask_max_ps(m, tail_mask(n - i), m, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return hmax(m);
}

float row_sum(const float* x, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
  if (i < n) s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return hsum(_mm512_add_ps(s0, s1));
}

// Sum of (x - mean)^2.
float row_sq_dev(const float* x, int64_t n, float mean) {
  __m512 m = _mm512_set1_ps(mean);
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), m);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m);
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
  }
  for (; i + 16 <= n; i += 16) {
    __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), m);
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 d = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + i), m);
    s1 = _mm512_fmadd_ps(d, d, s1);
  }
  return hsum(_mm512_add_ps(s0, s1));
}

// Softmax of one contiguous row.
void softmax_row(const float* x, float* y, int64_t n) {
  const __m512 mx = _mm512_set1_ps(row_max(x, n));
  __m512 s = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    _mm512_storeu_ps(y + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 e = _mm512_maskz_mov_ps(k, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mx)));
    _mm512_mask_storeu_ps(y + i, k, e);
    s = _mm512_add_ps(s, e);
  }
  const __m512 inv = _mm512_set1_ps(1.f / hsum(s));
  for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), inv));
  }
}

// Softmax over a strided axis: len values at stride `inner`, 16 columns at a time (mask k).
void softmax_columns(const float* x, float* y, int64_t len, int64_t inner, __mmask16 k) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < len; ++j) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, k, x + j * inner));
  __m512 s = _mm512_setzero_ps();
  for (int64_t j = 0; j < len; ++j) {
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j * inner), mx));
    _mm512_mask_storeu_ps(y + j * inner, k, e);
    s = _mm512_add_ps(s, e);
  }
  __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), s);
  for (int64_t j = 0; j < len; ++j)
    _mm512_mask_storeu_ps(y + j * inner, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + j * inner), inv));
}

class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(int64_t axis) : axis_(axis) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    const int r = x.rank();
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    SEGMUX_CHECK(axis >= 0 && axis < std::max(r, 1), ctx.node.describe(), ": axis ", axis_, " out of range for rank ",
                 r);
    if (x.numel() == 0) return;
    int64_t outer = 1, len = r == 0 ? 1 : x.dim(int(axis)), inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = int(axis) + 1; d < r; ++d) inner *= x.dim(d);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    int nt = x.numel() < 16384 ? 1 : ctx.num_threads;
    if (inner == 1) {
      parallel_chunks(outer, nt, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) softmax_row(px + o * len, py + o * len, len);
      });
      return;
    }
    const int64_t col_blocks = (inner + 15) / 16;
    parallel_chunks(outer * col_blocks, nt, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        int64_t o = w / col_blocks, c = (w % col_blocks) * 16;
        int64_t base = o * len * inner + c;
        softmax_columns(px + base, py + base, len, inner, tail_mask(inner - c));
      }
    });
  }

 private:
  int64_t axis_;
};

// y = (x - mean) * rstd * scale + bias over one row (scale/bias may be null = 1 / 0).
void normalize_row(const float* x, float* y, int64_t n, float mean, float rstd, const float* scale, const float* bias) {
  const __m512 vm = _mm512_set1_ps(mean), vr = _mm512_set1_ps(rstd);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), vr);
    if (scale) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, scale + i));
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + i));
    _mm512_mask_storeu_ps(y + i, k, v);
  }
}

class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(int64_t axis, float eps) : axis_(axis), eps_(eps) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    const int r = x.rank();
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    SEGMUX_CHECK(axis >= 0 && axis < r, ctx.node.describe(), ": axis ", axis_, " out of range for rank ", r);
    int64_t rows = 1, n = 1;
    for (int d = 0; d < axis; ++d) rows *= x.dim(d);
    for (int d = int(axis); d < r; ++d) n *= x.dim(d);
    const Tensor* scale = ctx.inputs[1];
    const Tensor* bias = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
    SEGMUX_CHECK(scale->numel() == n && (!bias || bias->numel() == n), ctx.node.describe(),
                 ": scale/bias must have the normalized size ", n);
    float* mean_out =
        ctx.outputs.size() > 1 && ctx.outputs[1] && ctx.outputs[1]->defined() ? ctx.outputs[1]->data<float>() : nullptr;
    float* rstd_out =
        ctx.outputs.size() > 2 && ctx.outputs[2] && ctx.outputs[2]->defined() ? ctx.outputs[2]->data<float>() : nullptr;
    if (rows * n == 0) return;
    const float* px = x.data<float>();
    float* py = ctx.outputs[0]->data<float>();
    const float* ps = scale->data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    int nt = rows * n < 16384 ? 1 : ctx.num_threads;
    const float eps = eps_;
    parallel_chunks(rows, nt, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const float* xr = px + row * n;
        float mean = row_sum(xr, n) / float(n);
        float var = row_sq_dev(xr, n, mean) / float(n);
        float rstd = 1.f / std::sqrt(var + eps);
        normalize_row(xr, py + row * n, n, mean, rstd, ps, pb);
        if (mean_out) mean_out[row] = mean;
        if (rstd_out) rstd_out[row] = rstd;
      }
    });
  }

 private:
  int64_t axis_;
  float eps_;
};

class GroupNormKernel : public Kernel {
 public:
  GroupNormKernel(int64_t groups, float eps) : groups_(groups), eps_(eps) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = *ctx.inputs[0];
    SEGMUX_CHECK(x.rank() >= 2, ctx.node.describe(), ": input must be [N, C, ...], got ", shape_str(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1);
    SEGMUX_CHECK(groups_ > 0 && C % groups_ == 0, ctx.node.describe(), ": ", C, " channels do not split into ", groups_,
                 " groups");
    int64_t spatial = 1;
    for (int d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
    const int64_t cg = C / groups_, n = cg * spatial;
    SEGMUX_CHECK(ctx.inputs[1]->numel() == C && ctx.inputs[2]->numel() == C, ctx.node.describe(),
                 ": scale and bias must have ", C, " values");
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    const float* ps = ctx.inputs[1]->data<float>();
    const float* pb = ctx.inputs[2]->data<float>();
    float* py = ctx.outputs[0]->data<float>();
    int nt = x.numel() < 16384 ? 1 : ctx.num_threads;
    const float eps = eps_;
    const int64_t groups = groups_;
    parallel_chunks(N * groups, nt, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const float* xg = px + w * n;
        float* yg = py + w * n;
        float mean = row_sum(xg, n) / float(n);
        float rstd = 1.f / std::sqrt(row_sq_dev(xg, n, mean) / float(n) + eps);
        const int64_t c0 = (w % groups) * cg;
        for (int64_t c = 0; c < cg; ++c) {
          // Per channel: y = x * a + b with a = rstd*scale, b = bias - mean*a.
          float a = rstd * ps[c0 + c], bb = pb[c0 + c] - mean * a;
          const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(bb);
          const float* xc = xg + c * spatial;
          float* yc = yg + c * spatial;
          for (int64_t i = 0; i < spatial; i += 16) {
            __mmask16 k = tail_mask(spatial - i);
            _mm512_mask_storeu_ps(yc + i, k, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, xc + i), va, vb));
          }
        }
      }
    });
  }

 private:
  int64_t groups_;
  float eps_;
};

bool float_io(const KernelInit& init) {
  for (auto* t : init.inputs)
    if (t && t->dtype != DType::f32) return false;
  for (auto& t : init.outputs)
    if (t.dtype != DType::f32) return false;
  return !init.inputs.empty() && init.inputs[0];
}

}  // namespace

std::unique_ptr<Kernel> make_softmax(const KernelInit& init) {
  if (!float_io(init)) return nullptr;
  return std::make_unique<SoftmaxKernel>(init.node.attr_int("axis", -1));
}

std::unique_ptr<Kernel> make_layer_norm(const KernelInit& init) {
  if (!float_io(init) || init.inputs.size() < 2 || !init.inputs[1]) return nullptr;
  // Scale/bias must cover the normalized dims exactly; other broadcasts stay with the reference.
  const ir::TensorType* x = init.inputs[0];
  if (!x->has_shape) return nullptr;
  int64_t axis = init.node.attr_int("axis", -1);
  if (axis < 0) axis += int64_t(x->shape.size());
  if (axis < 0 || axis >= int64_t(x->shape.size())) return nullptr;
  const int64_t n = shape_numel(Shape(x->shape.begin() + axis, x->shape.end()));
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i] && (!init.inputs[i]->has_shape || shape_numel(init.inputs[i]->shape) != n)) return nullptr;
  return std::make_unique<LayerNormKernel>(init.node.attr_int("axis", -1), init.node.attr_float("epsilon", 1e-5f));
}

std::unique_ptr<Kernel> make_group_norm(const KernelInit& init) {
  if (!float_io(init) || init.inputs.size() != 3 || !init.inputs[1] || !init.inputs[2]) return nullptr;
  return std::make_unique<GroupNormKernel>(init.node.attr_int("num_groups", 1), init.node.attr_float("epsilon", 1e-5f));
}

}  // namespace segmux::cpu
