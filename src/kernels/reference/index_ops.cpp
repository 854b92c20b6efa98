// Reference kernels driven by index data: GatherElements, GatherND, ScatterElements, ScatterND,
// NonZero, TopK, CumSum, OneHot, Trilu, Compress, ReverseSequence.
#include <algorithm>
#include <numeric>

#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

int64_t fix_index(const KernelContext& ctx, int64_t i, int64_t dim) {
  if (i < -dim || i >= dim) kfail(ctx, "index ", i, " is out of range for axis size ", dim);
  return i < 0 ? i + dim : i;
}

void gather_elements_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  std::vector<int64_t> idx = ints_of(ctx, in(ctx, 1));
  Tensor& y = out(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), x.rank());
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  for_each_index(y.shape(), [&](const std::vector<int64_t>& c, int64_t o) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      int64_t v = int64_t(d) == axis ? fix_index(ctx, idx[size_t(o)], x.shape()[d]) : c[d];
      if (int64_t(d) != axis && v >= x.shape()[d]) kfail(ctx, "indices shape exceeds the data shape");
      off += v * xs[d];
    }
    copy_elem(x, off, y, o);
  });
}

void gather_nd_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const Tensor& it = in(ctx, 1);
  std::vector<int64_t> idx = ints_of(ctx, it);
  Tensor& y = out(ctx, 0);
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  const int64_t k = it.shape().back();
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t batch = 1, slice = 1;
  for (int64_t d = 0; d < b; ++d) batch *= x.dim(int(d));
  for (int64_t d = b + k; d < x.rank(); ++d) slice *= x.dim(int(d));
  const int64_t tuples = k == 0 ? 0 : int64_t(idx.size()) / k;
  const int64_t per_batch = batch ? tuples / batch : 0;
  const int64_t batch_stride = b > 0 ? xs[size_t(b - 1)] : 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / std::max<int64_t>(per_batch, 1)) * batch_stride;
    for (int64_t j = 0; j < k; ++j)
      off += fix_index(ctx, idx[size_t(t * k + j)], x.dim(int(b + j))) * xs[size_t(b + j)];
    for (int64_t s = 0; s < slice; ++s) copy_elem(x, off + s, y, t * slice + s);
  }
}

template <typename T>
void combine(T& dst, T v, const std::string& red) {
  if (red == "add")
    dst = T(dst + v);
  else if (red == "mul")
    dst = T(dst * v);
  else if (red == "max")
    dst = std::max(dst, v);
  else if (red == "min")
    dst = std::min(dst, v);
  else
    dst = v;
}

void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  std::vector<int64_t> idx = ints_of(ctx, in(ctx, 1));
  const Tensor& u = in(ctx, 2);
  Tensor& y = out(ctx, 0);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), x.rank());
  const std::string red = ctx.node.attr_string("reduction", "none");
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  if (in(ctx, 1).shape() != u.shape()) kfail(ctx, "indices and updates shapes differ");
  dispatch(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    const T* pu = u.data<T>();
    for_each_index(u.shape(), [&](const std::vector<int64_t>& c, int64_t o) {
      int64_t off = 0;
      for (size_t d = 0; d < c.size(); ++d) {
        int64_t v = int64_t(d) == axis ? fix_index(ctx, idx[size_t(o)], x.shape()[d]) : c[d];
        if (int64_t(d) != axis && v >= x.shape()[d]) kfail(ctx, "updates shape exceeds the data shape");
        off += v * xs[d];
      }
      if constexpr (std::is_same_v<T, bool>)
        py[off] = pu[o];
      else
        combine(py[off], pu[o], red);
    });
  });
}

void scatter_nd_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const Tensor& it = in(ctx, 1);
  std::vector<int64_t> idx = ints_of(ctx, it);
  const Tensor& u = in(ctx, 2);
  Tensor& y = out(ctx, 0);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  const std::string red = ctx.node.attr_string("reduction", "none");
  const int64_t k = it.shape().back();
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t slice = 1;
  for (int64_t d = k; d < x.rank(); ++d) slice *= x.dim(int(d));
  const int64_t tuples = k == 0 ? 1 : int64_t(idx.size()) / k;
  dispatch(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    const T* pu = u.data<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) off += fix_index(ctx, idx[size_t(t * k + j)], x.dim(int(j))) * xs[size_t(j)];
      for (int64_t s = 0; s < slice; ++s) {
        if constexpr (std::is_same_v<T, bool>)
          py[off + s] = pu[t * slice + s];
        else
          combine(py[off + s], pu[t * slice + s], red);
      }
    }
  });
}

void nonzero_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  std::vector<int64_t> hits;
  dispatch(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      if (p[i] != T(0)) hits.push_back(i);
  });
  const int64_t r = x.rank(), n = int64_t(hits.size());
  Tensor y(DType::i64, {r, n});
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t* py = y.data<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = hits[size_t(j)];
    for (int64_t d = 0; d < r; ++d) {
      py[d * n + j] = rem / xs[size_t(d)];
      rem %= xs[size_t(d)];
    }
  }
  out(ctx, 0) = y;
}

void topk_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& values = out(ctx, 0);
  Tensor& indices = out(ctx, 1);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", -1), x.rank());
  const bool largest = ctx.node.attr_int("largest", 1) != 0;
  const int64_t k = values.dim(int(axis)), n = x.dim(int(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = values.data<T>();
    int64_t* pi = indices.data<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = px + o * n * inner + i;
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the lower index first (stable sort); NaN counts as the largest value.
        auto before = [&](int64_t a, int64_t b) {
          T va = base[a * inner], vb = base[b * inner];
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(va) || std::isnan(vb))
              return largest ? (std::isnan(va) && !std::isnan(vb)) : (!std::isnan(va) && std::isnan(vb));
          }
          return largest ? va > vb : va < vb;
        };
        std::stable_sort(order.begin(), order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          pv[(o * k + j) * inner + i] = base[order[size_t(j)] * inner];
          pi[(o * k + j) * inner + i] = order[size_t(j)];
        }
      }
  });
}

void cumsum_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  std::vector<int64_t> a = ints_of(ctx, in(ctx, 1));
  if (a.size() != 1) kfail(ctx, "axis must be a scalar");
  const int64_t axis = axis_of(ctx, a[0], x.rank());
  const bool exclusive = ctx.node.attr_int("exclusive", 0) != 0, reverse = ctx.node.attr_int("reverse", 0) != 0;
  const int64_t n = x.dim(int(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Acc acc = 0;
        for (int64_t s = 0; s < n; ++s) {
          const int64_t j = reverse ? n - 1 - s : s;
          const int64_t off = (o * n + j) * inner + i;
          if (exclusive) {
            py[off] = T(acc);
            acc = Acc(acc + Acc(px[off]));
          } else {
            acc = Acc(acc + Acc(px[off]));
            py[off] = T(acc);
          }
        }
      }
  });
}

void onehot_kernel(KernelContext& ctx) {
  const Tensor& idx_t = in(ctx, 0);
  std::vector<double> idx = doubles_of(idx_t);
  const Tensor& values = in(ctx, 2);
  Tensor& y = out(ctx, 0);
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", -1), y.rank());
  const int64_t depth = y.dim(int(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.dim(int(d));
  for (int64_t d = axis + 1; d < y.rank(); ++d) inner *= y.dim(int(d));
  for (int64_t i = 0; i < y.numel(); ++i) copy_elem(values, 0, y, i);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t v = int64_t(idx[size_t(o * inner + i)]);
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;
      copy_elem(values, 1, y, (o * depth + v) * inner + i);
    }
}

void trilu_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  int64_t k = 0;
  if (has_in(ctx, 1)) {
    auto kv = ints_of(ctx, in(ctx, 1));
    if (kv.size() != 1) kfail(ctx, "k must be a scalar");
    k = kv[0];
  }
  const bool upper = ctx.node.attr_int("upper", 1) != 0;
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  const int64_t mats = (rows > 0 && cols > 0) ? x.numel() / (rows * cols) : 0;
  const size_t es = dtype_size(x.dtype());
  std::byte* py = static_cast<std::byte*>(y.raw());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) std::memset(py + size_t((m * rows + i) * cols + j) * es, 0, es);
      }
}

void compress_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const Tensor& c = in(ctx, 1);
  const uint8_t* pc = static_cast<const uint8_t*>(c.raw());
  if (!ctx.node.has_attr("axis")) {
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < std::min(c.numel(), x.numel()); ++i)
      if (pc[i]) keep.push_back(i);
    Tensor y(x.dtype(), {int64_t(keep.size())});
    for (size_t j = 0; j < keep.size(); ++j) copy_elem(x, keep[j], y, int64_t(j));
    out(ctx, 0) = y;
    return;
  }
  const int64_t axis = axis_of(ctx, ctx.node.attr_int("axis", 0), x.rank());
  const int64_t n = x.dim(int(axis));
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < std::min(c.numel(), n); ++i)
    if (pc[i]) keep.push_back(i);
  Shape s = x.shape();
  s[size_t(axis)] = int64_t(keep.size());
  Tensor y(x.dtype(), s);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(int(d));
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(int(d));
  const int64_t m = int64_t(keep.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < inner; ++i)
        copy_elem(x, (o * n + keep[size_t(j)]) * inner + i, y, (o * m + j) * inner + i);
  out(ctx, 0) = y;
}

void reverse_sequence_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  std::vector<int64_t> lens = ints_of(ctx, in(ctx, 1));
  Tensor& y = out(ctx, 0);
  const int64_t batch_axis = ctx.node.attr_int("batch_axis", 1), time_axis = ctx.node.attr_int("time_axis", 0);
  if (x.rank() < 2 || batch_axis == time_axis || batch_axis < 0 || batch_axis > 1 || time_axis < 0 || time_axis > 1)
    kfail(ctx, "batch_axis/time_axis must be 0 and 1 of a rank >= 2 input");
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  for_each_index(y.shape(), [&](const std::vector<int64_t>& c, int64_t o) {
    const int64_t b = c[size_t(batch_axis)], t = c[size_t(time_axis)];
    if (size_t(b) >= lens.size()) kfail(ctx, "sequence_lens is too short");
    const int64_t len = std::clamp<int64_t>(lens[size_t(b)], 0, x.dim(int(time_axis)));
    const int64_t src_t = t < len ? len - 1 - t : t;
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += (int64_t(d) == time_axis ? src_t : c[d]) * xs[d];
    copy_elem(x, off, y, o);
  });
}

}  // namespace

void register_index_reference() {
  reg_bytes("GatherElements", gather_elements_kernel);
  reg_bytes("GatherND", gather_nd_kernel);
  reg("ScatterElements", scatter_elements_kernel);
  reg("ScatterND", scatter_nd_kernel);
  reg("NonZero", nonzero_kernel);
  reg("TopK", topk_kernel);
  reg("CumSum", cumsum_kernel);
  reg_bytes("OneHot", onehot_kernel);
  reg_bytes("Trilu", trilu_kernel);
  reg_bytes("Compress", compress_kernel);
  reg_bytes("ReverseSequence", reverse_sequence_kernel);
}

}  // namespace segmux::ref
