#include "kernels/reference/ref_common.h"

namespace segmux::ref {

const Tensor& in(const KernelContext& ctx, size_t i) {
  if (!has_in(ctx, i)) kfail(ctx, "required input ", i, " is missing");
  return *ctx.inputs[i];
}

Tensor& out(const KernelContext& ctx, size_t k) {
  if (k >= ctx.outputs.size() || ctx.outputs[k] == nullptr) kfail(ctx, "output ", k, " is missing");
  return *ctx.outputs[k];
}

std::vector<int64_t> ints_of(const KernelContext& ctx, const Tensor& t) {
  std::vector<int64_t> v(size_t(t.numel()));
  if (t.dtype() == DType::i64) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int64_t>()[i];
  } else if (t.dtype() == DType::i32) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int32_t>()[i];
  } else {
    kfail(ctx, "expected an i64 or i32 tensor, got ", dtype_name(t.dtype()));
  }
  return v;
}

std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.get_as_double(int64_t(i));
  return v;
}

namespace {
bool is16(DType t) { return t == DType::f16 || t == DType::bf16; }
}  // namespace

KernelFn upcast16(KernelFn fn) {
  return [fn](KernelContext& ctx) {
    bool any = false;
    for (const Tensor* t : ctx.inputs) any = any || (t && t->defined() && is16(t->dtype()));
    for (const Tensor* t : ctx.outputs) any = any || (t && t->defined() && is16(t->dtype()));
    if (!any) return fn(ctx);
    DType first16 = DType::f32;
    for (const Tensor* t : ctx.inputs)
      if (t && t->defined() && is16(t->dtype()) && first16 == DType::f32) first16 = t->dtype();
    std::vector<Tensor> in32(ctx.inputs.size());
    std::vector<const Tensor*> ins(ctx.inputs.size(), nullptr);
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      const Tensor* t = ctx.inputs[i];
      if (t && t->defined() && is16(t->dtype())) {
        in32[i] = t->cast(DType::f32);
        ins[i] = &in32[i];
      } else {
        ins[i] = t;
      }
    }
    std::vector<Tensor> out32(ctx.outputs.size());
    std::vector<Tensor*> outs(ctx.outputs.size(), nullptr);
    std::vector<char> was_unset(ctx.outputs.size(), 0);
    for (size_t k = 0; k < ctx.outputs.size(); ++k) {
      Tensor* t = ctx.outputs[k];
      if (t && t->defined() && is16(t->dtype())) {
        out32[k] = Tensor(DType::f32, t->shape());
        outs[k] = &out32[k];
      } else {
        outs[k] = t;
        was_unset[k] = t && !t->defined();
      }
    }
    KernelContext inner{ctx.node, ins, outs, ctx.num_threads};
    fn(inner);
    for (size_t k = 0; k < ctx.outputs.size(); ++k) {
      Tensor* t = ctx.outputs[k];
      if (outs[k] == &out32[k]) {
        Tensor r = out32[k].cast(t->dtype());
        std::memcpy(t->raw(), r.raw(), r.nbytes());
      } else if (was_unset[k] && t->defined() && t->dtype() == DType::f32 && first16 != DType::f32) {
        *t = t->cast(first16);  // a data-dependent output of the 16-bit data
      }
    }
  };
}

void reg(const std::string& op, KernelFn fn) { register_reference_kernel_fn("", op, upcast16(std::move(fn))); }

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> own = contiguous_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : own[i];
  return st;
}

int64_t axis_of(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) kfail(ctx, "axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

namespace {
template <typename E>
void gather_rows(const E* src, E* dst, int64_t base, const std::vector<int64_t>& st, const Shape& shape) {
  const size_t r = shape.size();
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  if (r == 0) {
    dst[0] = src[base];
    return;
  }
  const int64_t inner = shape[r - 1], step = st[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t off = base;
  for (int64_t o = 0; o < total; o += inner) {
    const E* s = src + off;
    E* d = dst + o;
    if (step == 1) {
      std::memcpy(d, s, size_t(inner) * sizeof(E));
    } else {
      for (int64_t k = 0; k < inner; ++k) d[k] = s[k * step];
    }
    for (size_t a = r - 1; a-- > 0;) {  // odometer over the outer dims
      off += st[a];
      if (++idx[a] < shape[a]) break;
      off -= st[a] * shape[a];
      idx[a] = 0;
    }
  }
}
}  // namespace

void strided_gather(const Tensor& x, int64_t base, const std::vector<int64_t>& st, Tensor& y) {
  const void* s = x.raw();
  void* d = y.raw();
  switch (dtype_size(x.dtype())) {
    case 1:
      return gather_rows(static_cast<const uint8_t*>(s), static_cast<uint8_t*>(d), base, st, y.shape());
    case 2:
      return gather_rows(static_cast<const uint16_t*>(s), static_cast<uint16_t*>(d), base, st, y.shape());
    case 4:
      return gather_rows(static_cast<const uint32_t*>(s), static_cast<uint32_t*>(d), base, st, y.shape());
    default:
      return gather_rows(static_cast<const uint64_t*>(s), static_cast<uint64_t*>(d), base, st, y.shape());
  }
}

}  // namespace segmux::ref
