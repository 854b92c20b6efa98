// Split and Concat as runs of memcpy (any dtype): along `axis` every input/output is `outer` rows of
// one contiguous chunk, so each (row, piece) is a single copy; a piece the memory planner placed on its
// slice of the whole is skipped. Output shapes come preallocated from shape inference, which also
// validated the split sizes.
#include <cstring>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_kernels.h"

namespace segmux::cpu {
namespace {

// Bytes per row of `t` from `axis` on, and the row count before it.
void rows_of(const Tensor& t, int axis, int64_t* outer, size_t* row_bytes) {
  int64_t o = 1, inner = 1;
  for (int d = 0; d < axis; ++d) o *= t.dim(d);
  for (int d = axis; d < t.rank(); ++d) inner *= t.dim(d);
  *outer = o;
  *row_bytes = size_t(inner) * dtype_size(t.dtype());
}

class SplitConcatKernel : public Kernel {
 public:
  SplitConcatKernel(bool split, int64_t axis) : split_(split), axis_(axis) {}
  void run(KernelContext& ctx) override {
    const Tensor& whole = split_ ? *ctx.inputs[0] : *ctx.outputs[0];
    const int r = whole.rank();
    const int axis = int(axis_ < 0 ? axis_ + r : axis_);
    SEGMUX_CHECK(axis >= 0 && axis < r, ctx.node.describe(), ": axis ", axis_, " out of range for rank ", r);
    std::vector<const Tensor*> parts;
    if (split_) {
      for (Tensor* t : ctx.outputs)
        if (t && t->defined()) parts.push_back(t);
    } else {
      for (const Tensor* t : ctx.inputs)
        if (t) parts.push_back(t);
    }
    int64_t outer;
    size_t whole_row;
    rows_of(whole, axis, &outer, &whole_row);
    std::vector<size_t> part_row(parts.size()), offset(parts.size());
    size_t off = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      int64_t o;
      rows_of(*parts[p], axis, &o, &part_row[p]);
      SEGMUX_CHECK(o == outer || part_row[p] == 0, ctx.node.describe(), ": piece ", p, " ",
                   shape_str(parts[p]->shape()), " does not line up with ", shape_str(whole.shape()));
      offset[p] = off;
      off += part_row[p];
    }
    SEGMUX_CHECK(off == whole_row, ctx.node.describe(), ": pieces do not add up to ", shape_str(whole.shape()));
    if (whole_row == 0 || outer == 0) return;
    std::byte* base = static_cast<std::byte*>(const_cast<void*>(whole.raw()));
    int nt = whole.nbytes() < (size_t(1) << 18) ? 1 : ctx.num_threads;
    parallel_chunks(outer * int64_t(parts.size()), nt, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const int64_t row = w / int64_t(parts.size());
        const size_t p = size_t(w % int64_t(parts.size()));
        std::byte* whole_ptr = base + size_t(row) * whole_row + offset[p];
        std::byte* part_ptr = static_cast<std::byte*>(const_cast<void*>(parts[p]->raw())) + size_t(row) * part_row[p];
        if (part_row[p] == 0 || part_ptr == whole_ptr) continue;  // already in place (memory planner)
        if (split_)
          std::memcpy(part_ptr, whole_ptr, part_row[p]);
        else
          std::memcpy(whole_ptr, part_ptr, part_row[p]);
      }
    });
  }

 private:
  bool split_;
  int64_t axis_;
};

bool known_shapes(const KernelInit& init) {
  for (auto* t : init.inputs)
    if (t && !t->has_shape) return false;
  for (auto& t : init.outputs)
    if (!t.has_shape)
      return false;
    else
      for (int64_t d : t.shape)
        if (d < 0) return false;
  return true;
}

}  // namespace

std::unique_ptr<Kernel> make_split(const KernelInit& init) {
  // Omitted outputs would leave holes in the layout: those stay with the reference kernel.
  for (int o : init.node.outputs)
    if (o < 0) return nullptr;
  if (init.inputs.empty() || !init.inputs[0] || !known_shapes(init)) return nullptr;
  return std::make_unique<SplitConcatKernel>(true, init.node.attr_int("axis", 0));
}

std::unique_ptr<Kernel> make_concat(const KernelInit& init) {
  if (init.inputs.empty() || !known_shapes(init) || !init.node.has_attr("axis")) return nullptr;
  for (auto* t : init.inputs)
    if (!t || t->dtype != init.outputs[0].dtype) return nullptr;
  return std::make_unique<SplitConcatKernel>(false, init.node.attr_int("axis", 0));
}

}  // namespace segmux::cpu
