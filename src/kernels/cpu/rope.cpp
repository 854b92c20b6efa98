// segmux Rope: rotary embedding on interleaved pairs in one pass. With constant tables, cos and the
// signed sin are expanded once at kernel creation to full rows [L, D] (pair-duplicated), so a row is
// y = x * cos2 + swap_pairs(x) * sin2 — the same products and sums as the unfused graph (bit-exact).
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/strided_operand.h"

namespace segmux::cpu {
namespace {

class RopeKernel : public Kernel {
 public:
  RopeKernel(const Tensor& cos, const Tensor& sin, int64_t L, int64_t D) : L_(L), D_(D) {
    const int64_t half = D / 2;
    cos2_.resize(size_t(L * D));
    sin2_.resize(size_t(L * D));
    const float* c = cos.data<float>();
    const float* s = sin.data<float>();
    for (int64_t l = 0; l < L; ++l)
      for (int64_t i = 0; i < half; ++i) {
        cos2_[size_t(l * D + 2 * i)] = cos2_[size_t(l * D + 2 * i + 1)] = c[l * half + i];
        sin2_[size_t(l * D + 2 * i)] = -s[l * half + i];
        sin2_[size_t(l * D + 2 * i + 1)] = s[l * half + i];
      }
  }

  void run(KernelContext& ctx) override {
    const StridedOperand x = strided_operand(ctx, 0);  // maybe a strided view (ir/strided_view.h)
    SEGMUX_CHECK(x.shape.size() >= 2 && x.dim(-2) == L_ && x.dim(-1) == D_, ctx.node.describe(), ": input ",
                 shape_str(x.shape), " does not match the tables [", L_, ", ", D_ / 2, "]");
    float* py = ctx.outputs[0]->data<float>();
    const int64_t numel = shape_numel(x.shape), rows = numel / D_, D = D_, L = L_, x_row = x.stride(-2);
    const float* c2 = cos2_.data();
    const float* s2 = sin2_.data();
    int nt = numel < 32768 ? 1 : ctx.num_threads;
    // Rows of one leading index are x_row apart; the leading dims have strides of their own.
    parallel_chunks(rows, nt, [&](int64_t b, int64_t e) {
      while (b < e) {
        const int64_t lead = b / L, l0 = b % L, l1 = std::min(L, l0 + (e - b));
        rows_(x.data + x.lead_offset(lead), x_row, c2, s2, py + lead * L * D, l0, l1, L, D);
        b += l1 - l0;
      }
    });
  }

 private:
  int64_t L_, D_;
  std::vector<float> cos2_, sin2_;
  decltype(RopeFns::rows) rows_ = rope_fns().rows;
};

}  // namespace

std::unique_ptr<Kernel> make_rope(const KernelInit& init) {
  if (init.inputs.size() != 3 || !init.inputs[0] || !init.inputs[0]->has_shape) return nullptr;
  for (auto* t : init.inputs)
    if (!t || t->dtype != DType::f32) return nullptr;
  const Tensor* c = init.constants[1];
  const Tensor* s = init.constants[2];
  const Shape xs = ir::read_shape(init.node, 0, init.inputs[0]->shape);
  if (!c || !s || xs.size() < 2 || xs.back() % 2 != 0) return nullptr;
  const int64_t L = xs[xs.size() - 2], D = xs.back();
  if (c->numel() != L * D / 2 || s->numel() != L * D / 2) return nullptr;
  return std::make_unique<RopeKernel>(*c, *s, L, D);
}

}  // namespace segmux::cpu
