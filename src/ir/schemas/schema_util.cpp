#include "ir/schemas/schema_util.h"

namespace segmux::ir::schema_util {

int64_t norm_axis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank || rank == 0)
    ctx.error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast(const InferContext& ctx, const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      ctx.error("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
  }
  return out;
}

std::optional<std::vector<int64_t>> const_ints(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  if (!t || !t->defined()) return std::nullopt;
  std::vector<int64_t> v(size_t(t->numel()));
  if (t->dtype() == DType::i64) {
    for (size_t k = 0; k < v.size(); ++k) v[k] = t->data<int64_t>()[k];
  } else if (t->dtype() == DType::i32) {
    for (size_t k = 0; k < v.size(); ++k) v[k] = t->data<int32_t>()[k];
  } else {
    ctx.error("input " + std::to_string(i) + " must be i64 or i32, got " + std::string(dtype_name(t->dtype())));
  }
  return v;
}

std::optional<int64_t> const_int(const InferContext& ctx, size_t i) {
  auto v = const_ints(ctx, i);
  if (!v) return std::nullopt;
  if (v->size() != 1)
    ctx.error("input " + std::to_string(i) + " must hold exactly one value, has " + std::to_string(v->size()));
  return (*v)[0];
}

std::optional<std::vector<double>> const_doubles(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  if (!t || !t->defined()) return std::nullopt;
  std::vector<double> v(size_t(t->numel()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = t->get_as_double(int64_t(k));
  return v;
}

void check_buildable(const InferContext& ctx, const Shape& s) {
  const int64_t limit = int64_t(1) << 48;  // elements; far beyond any real tensor, far below overflow
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) ctx.error("shape " + shape_str(s) + " has a negative dimension");
    if (d > limit || (d > 0 && n > limit / d)) ctx.error("shape " + shape_str(s) + " is too large");
    n *= d;
  }
}

bool shapes_known(const InferContext& ctx, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (ctx.has_input(i) && !ctx.inputs[i]->has_shape) return false;
  return true;
}

void require_dtype(const InferContext& ctx, size_t i, std::initializer_list<DType> allowed, const char* what) {
  if (!ctx.has_input(i)) return;
  DType t = ctx.in(i).dtype;
  for (DType a : allowed)
    if (a == t) return;
  ctx.error("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(t)) + ", expected " + what);
}

void require_float(const InferContext& ctx, size_t i) {
  require_dtype(ctx, i, {DType::f32, DType::f16, DType::bf16, DType::f64}, "a float type");
}
void require_int(const InferContext& ctx, size_t i) { require_dtype(ctx, i, {DType::i64, DType::i32}, "i64 or i32"); }

}  // namespace segmux::ir::schema_util
