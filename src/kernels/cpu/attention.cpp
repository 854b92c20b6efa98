// segmux Attention, flash-style: softmax(q k^T * scale + mask) v computed one (query block, key block)
// tile at a time with a running max and sum per query row, so no Lq x Lk score matrix is ever
// materialised. Layout: q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv] with equal leading (batch,
// head) dims; mask (optional) broadcastable to [..., Lq, Lk], f32 (added) or bool (true = attend).
// A query row whose keys are all masked gives zeros. Nodes compiled in bf16 (segmux_precision) use the
// bf16 tile where the CPU has AVX512_BF16 (products of bf16-rounded operands, f32 softmax), else f32.
//
// One tile (a batch-head's query block against all keys) is computed by the loops of the instruction
// set chosen at kernel creation (simd.h AttentionFns), which also set the tile's rows and scratch. The
// portable tiles read K transposed (done once per call into a reused buffer); the AVX-512 tile reads K
// as it is (attention_avx512.cpp).
#include "ir/precision.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/strided_operand.h"

namespace segmux::cpu {
namespace {

// The output [..., Lq, Dv] as written: into out_tensor as it is, or permuted (ir::kOutputPerm): then
// logical dim perm[i] has the stride of the tensor's dim i.
StridedSpan<float> output_operand(const KernelContext& ctx, Tensor& out_tensor, const Shape& q_shape, int64_t Dv) {
  StridedSpan<float> out;
  out.data = out_tensor.data<float>();
  out.shape = q_shape;
  out.shape.back() = Dv;
  out.strides = contiguous_strides(out.shape);
  if (!ctx.node.has_attr(ir::kOutputPerm)) {
    SEGMUX_CHECK(out_tensor.shape() == out.shape, ctx.node.describe(), ": output ", shape_str(out_tensor.shape()),
                 ", expected ", shape_str(out.shape));
    return out;
  }
  const std::vector<int64_t> perm = ctx.node.attr_ints(ir::kOutputPerm);
  const std::string why = ir::check_output_perm(perm, out.shape.size());
  SEGMUX_CHECK(why.empty(), ctx.node.describe(), ": ", why);
  const std::vector<int64_t> physical = contiguous_strides(out_tensor.shape());
  SEGMUX_CHECK(out_tensor.rank() == int(perm.size()), ctx.node.describe(), ": output rank differs from output_perm");
  for (size_t i = 0; i < perm.size(); ++i) {
    SEGMUX_CHECK(out_tensor.dim(int(i)) == out.shape[size_t(perm[i])], ctx.node.describe(), ": output ",
                 shape_str(out_tensor.shape()), " is not the permuted ", shape_str(out.shape));
    out.strides[size_t(perm[i])] = physical[i];
  }
  return out;
}

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(float scale_attr, bool has_scale, bool bf16) : scale_attr_(scale_attr), has_scale_(has_scale) {
    if (bf16 && attention_bf16_fns()) fns_ = attention_bf16_fns();
  }

  void run(KernelContext& ctx) override {
    // q, k, v and the output as the kernel reads / writes them: maybe strided (ir/strided_view.h).
    const StridedOperand q = strided_operand(ctx, 0), k = strided_operand(ctx, 1), v = strided_operand(ctx, 2);
    const Tensor* mask = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
    const int r = int(q.shape.size());
    SEGMUX_CHECK(r >= 2 && int(k.shape.size()) == r && int(v.shape.size()) == r, ctx.node.describe(),
                 ": q, k, v must have equal rank >= 2");
    const int64_t Lq = q.dim(-2), D = q.dim(-1), Lk = k.dim(-2), Dv = v.dim(-1);
    SEGMUX_CHECK(k.dim(-1) == D && v.dim(-2) == Lk, ctx.node.describe(), ": k/v shapes do not match q");
    int64_t BH = 1;
    for (int d = 0; d < r - 2; ++d) {
      SEGMUX_CHECK(k.dim(d) == q.dim(d) && v.dim(d) == q.dim(d), ctx.node.describe(), ": batch dims of q, k, v differ");
      BH *= q.dim(d);
    }
    Tensor& out_tensor = *ctx.outputs[0];
    const StridedSpan<float> out = output_operand(ctx, out_tensor, q.shape, Dv);
    if (out_tensor.numel() == 0) return;
    const float scale = has_scale_ ? scale_attr_ : 1.f / std::sqrt(float(D));
    // Mask strides over (batch dims..., Lq, Lk), 0 where broadcast.
    std::vector<int64_t> mstride(size_t(r), 0);
    if (mask) {
      SEGMUX_CHECK(mask->rank() <= r, ctx.node.describe(), ": mask rank exceeds the scores' rank");
      int64_t s = 1;
      for (int d = r - 1, md = mask->rank() - 1; md >= 0; --d, --md) {
        int64_t want = d == r - 1 ? Lk : d == r - 2 ? Lq : q.dim(d);
        int64_t have = mask->dim(md);
        SEGMUX_CHECK(have == want || have == 1, ctx.node.describe(), ": mask ", shape_str(mask->shape()),
                     " does not broadcast to the scores");
        mstride[size_t(d)] = have == 1 ? 0 : s;
        s *= have;
      }
    }
    float* po = out.data;
    if (Lk == 0) {  // no keys: every row is fully masked
      for (int64_t bh = 0; bh < BH; ++bh)
        for (int64_t i = 0; i < Lq; ++i) std::fill_n(po + out.lead_offset(bh) + i * out.stride(-2), Dv, 0.f);
      return;
    }
    const int nt = threads_of(ctx.num_threads);

    const AttentionFns& fns = *fns_;
    // K^T per (batch, head), [BH][D][Lk], for the tiles that read it (portable levels).
    float* kt = nullptr;
    if (fns.wants_kt) {
      kt = kt_.get(size_t(BH * D * Lk));
      parallel_chunks(BH, nt, [&](int64_t b, int64_t e) {
        for (int64_t bh = b; bh < e; ++bh) {
          const float* src = k.data + k.lead_offset(bh);
          float* dst = kt + bh * D * Lk;
          for (int64_t j0 = 0; j0 < Lk; j0 += 16)
            for (int64_t d = 0; d < D; ++d)
              for (int64_t j = j0; j < std::min(Lk, j0 + 16); ++j) dst[d * Lk + j] = src[j * k.stride(-2) + d];
        }
      });
    }

    if (int(scratch_.size()) < nt) scratch_.resize(size_t(nt));
    // Rows per work item: the level's block, smaller (a multiple of its granule) when that leaves too few
    // items to keep every thread busy.
    int64_t qb = fns.query_block;
    while (qb > fns.query_granule && BH * ((Lq + qb - 1) / qb) < 4 * int64_t(nt))
      qb = std::max(fns.query_granule, (qb / 2 + fns.query_granule - 1) / fns.query_granule * fns.query_granule);
    const int64_t qblocks = (Lq + qb - 1) / qb;
    const size_t scratch_floats = size_t(fns.scratch_floats(D, Dv));
    const bool bool_mask = mask && mask->dtype() == DType::boolean;
    const float* fmask = mask && !bool_mask ? mask->data<float>() : nullptr;
    const bool* bmask = bool_mask ? mask->data<bool>() : nullptr;
    parallel_items(BH * qblocks, nt, [&](int64_t item, int t) {
      AttentionTile tile;
      tile.scratch = scratch_[size_t(t)].get(scratch_floats);
      const int64_t bh = item / qblocks, i0 = (item % qblocks) * qb;
      tile.rows = std::min(qb, Lq - i0);
      tile.q_row = q.stride(-2);
      tile.k_row = k.stride(-2);
      tile.v_row = v.stride(-2);
      tile.out_row = out.stride(-2);
      tile.q = q.data + q.lead_offset(bh) + i0 * tile.q_row;
      tile.k = k.data + k.lead_offset(bh);
      tile.kt = kt ? kt + bh * D * Lk : nullptr;
      tile.v = v.data + v.lead_offset(bh);
      tile.out = po + out.lead_offset(bh) + i0 * tile.out_row;
      tile.D = D;
      tile.Lk = Lk;
      tile.Dv = Dv;
      tile.scale = scale;
      tile.fmask = fmask;
      tile.bmask = bmask;
      tile.moff = 0;
      if (mask) {
        int64_t rem = bh;
        for (int d = r - 3; d >= 0; --d) {
          tile.moff += (rem % q.dim(d)) * mstride[size_t(d)];
          rem /= q.dim(d);
        }
        tile.moff += i0 * mstride[size_t(r - 2)];
      }
      tile.mrow = mstride[size_t(r - 2)];
      tile.mcol = mstride[size_t(r - 1)];
      fns.tile(tile);
    });
  }

 private:
  float scale_attr_;
  bool has_scale_;
  Scratch kt_;
  std::vector<Scratch> scratch_;
  const AttentionFns* fns_ = &attention_fns();
};

}  // namespace

std::unique_ptr<Kernel> make_attention(const KernelInit& init) {
  if (init.inputs.size() < 3) return nullptr;
  for (int i = 0; i < 3; ++i)
    if (!init.inputs[size_t(i)] || init.inputs[size_t(i)]->dtype != DType::f32) return nullptr;
  if (init.inputs.size() > 3 && init.inputs[3] && init.inputs[3]->dtype != DType::f32 &&
      init.inputs[3]->dtype != DType::boolean)
    return nullptr;
  return std::make_unique<AttentionKernel>(init.node.attr_float("scale", 0.f), init.node.has_attr("scale"),
                                           ir::wants_bf16(init.node));
}

}  // namespace segmux::cpu
