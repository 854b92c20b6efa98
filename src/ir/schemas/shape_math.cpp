#include "ir/schemas/shape_math.h"

#include <algorithm>
#include <cmath>

namespace segmux::ir::shape_math {

namespace {
int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
}  // namespace

std::vector<SliceAxis> slice_plan(const Node& n, const Shape& in, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& ends, const std::vector<int64_t>* axes,
                                  const std::vector<int64_t>* steps) {
  const int64_t r = int64_t(in.size());
  SEGMUX_CHECK(starts.size() == ends.size(), n.describe(), ": starts has ", starts.size(), " values but ends has ",
               ends.size());
  SEGMUX_CHECK(!axes || axes->size() == starts.size(), n.describe(), ": axes has ", axes ? axes->size() : 0,
               " values, starts has ", starts.size());
  SEGMUX_CHECK(!steps || steps->size() == starts.size(), n.describe(), ": steps has ", steps ? steps->size() : 0,
               " values, starts has ", starts.size());
  std::vector<SliceAxis> plan(in.size());
  for (size_t a = 0; a < in.size(); ++a) plan[a] = SliceAxis{0, 1, in[a]};
  std::vector<char> seen(in.size(), 0);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = axes ? (*axes)[i] : int64_t(i);
    SEGMUX_CHECK(axis >= -r && axis < r, n.describe(), ": slice axis ", axis, " is out of range for rank ", r);
    if (axis < 0) axis += r;
    SEGMUX_CHECK(!seen[size_t(axis)], n.describe(), ": axis ", axis, " is sliced twice");
    seen[size_t(axis)] = 1;
    const int64_t dim = in[size_t(axis)];
    const int64_t step = steps ? (*steps)[i] : 1;
    SEGMUX_CHECK(step != 0, n.describe(), ": slice step 0 on axis ", axis);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;  // then clamped below; dim >= 0 so this cannot overflow
    if (e < 0) e += dim;
    int64_t len;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = (dim > 0 && s > e) ? (s - e + (-step) - 1) / (-step) : 0;
      if (dim == 0) s = 0;
    }
    plan[size_t(axis)] = SliceAxis{s, step, len};
  }
  return plan;
}

Shape reshape_target(const Node& n, const Shape& in, const std::vector<int64_t>& shape, bool allowzero) {
  Shape out(shape.size());
  int infer_at = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == -1) {
      SEGMUX_CHECK(infer_at < 0, n.describe(), ": shape ", shape_str(shape), " has more than one -1");
      infer_at = int(i);
      out[i] = 1;
      continue;
    }
    SEGMUX_CHECK(d >= 0, n.describe(), ": shape ", shape_str(shape), " has the invalid dimension ", d);
    if (d == 0 && !allowzero) {
      SEGMUX_CHECK(i < in.size(), n.describe(), ": shape ", shape_str(shape), " copies dimension ", i,
                   " (0) but the input ", shape_str(in), " has rank ", in.size());
      d = in[i];
    }
    if (d == 0) has_zero = true;
    out[i] = d;
    known *= d;
  }
  const int64_t total = shape_numel(in);
  if (infer_at >= 0) {
    SEGMUX_CHECK(!(allowzero && has_zero), n.describe(), ": shape ", shape_str(shape),
                 " has both -1 and 0 with allowzero=1");
    SEGMUX_CHECK(known != 0 ? total % known == 0 : total == 0, n.describe(), ": cannot reshape ", shape_str(in), " to ",
                 shape_str(shape));
    out[size_t(infer_at)] = known != 0 ? total / known : 0;
  } else {
    SEGMUX_CHECK(known == total, n.describe(), ": cannot reshape ", shape_str(in), " (", total, " elements) to ",
                 shape_str(out), " (", known, " elements)");
  }
  return out;
}

namespace {
std::vector<int64_t> attr_or(const Node& n, const char* name, size_t count, int64_t def) {
  std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(count, def));
  if (v.empty()) v.assign(count, def);
  SEGMUX_CHECK(v.size() == count, n.describe(), ": attribute ", name, " has ", v.size(), " values, expected ", count);
  return v;
}
}  // namespace

// Window parameters beyond this (and input sizes) would overflow the arithmetic below; no real model
// comes near it.
constexpr int64_t kMaxWindow = int64_t(1) << 31;

Window conv_window(const Node& n, const Shape& x, const std::vector<int64_t>& kernel, bool pooling) {
  SEGMUX_CHECK(x.size() >= 3, n.describe(), ": input must have rank >= 3 ([N, C, spatial...]), got ", shape_str(x));
  const size_t r = x.size() - 2;
  SEGMUX_CHECK(kernel.size() == r, n.describe(), ": kernel has ", kernel.size(), " spatial dims, input has ", r);
  Window w;
  w.kernel = kernel;
  w.strides = attr_or(n, "strides", r, 1);
  w.dilations = attr_or(n, "dilations", r, 1);
  std::vector<int64_t> pads = attr_or(n, "pads", 2 * r, 0);
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const bool ceil_mode = pooling && n.attr_int("ceil_mode", 0) != 0;
  w.pad_begin.resize(r);
  w.pad_end.resize(r);
  w.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = x[i + 2], s = w.strides[i], d = w.dilations[i], k = kernel[i];
    SEGMUX_CHECK(s > 0 && d > 0 && k > 0 && s <= kMaxWindow && d <= kMaxWindow && k <= kMaxWindow, n.describe(),
                 ": strides, dilations and kernel sizes must be within 1..", kMaxWindow);
    SEGMUX_CHECK(in >= 0 && in <= kMaxWindow, n.describe(), ": input size ", in, " on spatial axis ", i,
                 " is out of range");
    const int64_t span = (k - 1) * d + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = ceil_div(in, s);
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
      w.out[i] = out;
      continue;
    }
    if (auto_pad == "VALID") {
      w.pad_begin[i] = w.pad_end[i] = 0;
    } else {
      SEGMUX_CHECK(auto_pad == "NOTSET", n.describe(), ": unknown auto_pad '", auto_pad, "'");
      w.pad_begin[i] = pads[i];
      w.pad_end[i] = pads[i + r];
      SEGMUX_CHECK(pads[i] >= 0 && pads[i + r] >= 0 && pads[i] <= kMaxWindow && pads[i + r] <= kMaxWindow, n.describe(),
                   ": pads must be within 0..", kMaxWindow);
    }
    const int64_t avail = in + w.pad_begin[i] + w.pad_end[i] - span;
    SEGMUX_CHECK(avail >= 0, n.describe(), ": window of span ", span, " does not fit input size ", in, " with padding ",
                 w.pad_begin[i], "+", w.pad_end[i]);
    int64_t out = (ceil_mode ? ceil_div(avail, s) : avail / s) + 1;
    // Like PyTorch and ORT: the last window must start inside the input or the left padding.
    if (ceil_mode && (out - 1) * s >= in + w.pad_begin[i]) --out;
    w.out[i] = out;
  }
  return w;
}

Window conv_transpose_window(const Node& n, const Shape& x, const std::vector<int64_t>& kernel) {
  SEGMUX_CHECK(x.size() >= 3, n.describe(), ": input must have rank >= 3 ([N, C, spatial...]), got ", shape_str(x));
  const size_t r = x.size() - 2;
  SEGMUX_CHECK(kernel.size() == r, n.describe(), ": kernel has ", kernel.size(), " spatial dims, input has ", r);
  Window w;
  w.kernel = kernel;
  w.strides = attr_or(n, "strides", r, 1);
  w.dilations = attr_or(n, "dilations", r, 1);
  std::vector<int64_t> pads = attr_or(n, "pads", 2 * r, 0);
  std::vector<int64_t> out_pad = attr_or(n, "output_padding", r, 0);
  std::vector<int64_t> out_shape = n.attr_ints("output_shape", {});
  if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  SEGMUX_CHECK(out_shape.empty() || out_shape.size() == r, n.describe(), ": output_shape has ", out_shape.size(),
               " values, expected ", r);
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  SEGMUX_CHECK(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER",
               n.describe(), ": unknown auto_pad '", auto_pad, "'");
  w.pad_begin.resize(r);
  w.pad_end.resize(r);
  w.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = x[i + 2], s = w.strides[i], d = w.dilations[i], k = kernel[i];
    SEGMUX_CHECK(s > 0 && d > 0 && k > 0 && s <= kMaxWindow && d <= kMaxWindow && k <= kMaxWindow, n.describe(),
                 ": strides, dilations and kernel sizes must be within 1..", kMaxWindow);
    SEGMUX_CHECK(in >= 0 && in <= kMaxWindow, n.describe(), ": input size ", in, " on spatial axis ", i,
                 " is out of range");
    SEGMUX_CHECK(out_pad[i] >= 0 && out_pad[i] <= kMaxWindow && pads[i] >= 0 && pads[i] <= kMaxWindow &&
                     pads[i + r] >= 0 && pads[i + r] <= kMaxWindow,
                 n.describe(), ": output_padding and pads must be within 0..", kMaxWindow);
    SEGMUX_CHECK(out_shape.empty() || (out_shape[i] >= 0 && out_shape[i] <= kMaxWindow), n.describe(),
                 ": output_shape value ", out_shape.empty() ? 0 : out_shape[i], " is out of range");
    const int64_t full = s * (in - 1) + out_pad[i] + (k - 1) * d + 1;
    const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!out_shape.empty() || same) {
      const int64_t target = out_shape.empty() ? in * s : out_shape[i];
      // Like ORT: a target larger than the natural output pads zeros at the end (no negative pads).
      const int64_t total = std::max<int64_t>(0, full - target);
      if (auto_pad == "SAME_UPPER") {
        w.pad_begin[i] = total / 2;
        w.pad_end[i] = total - total / 2;
      } else {
        w.pad_begin[i] = total - total / 2;
        w.pad_end[i] = total / 2;
      }
      w.out[i] = target;
    } else {
      if (auto_pad == "NOTSET") {
        w.pad_begin[i] = pads[i];
        w.pad_end[i] = pads[i + r];
      }
      w.out[i] = full - w.pad_begin[i] - w.pad_end[i];
    }
    SEGMUX_CHECK(w.out[i] >= 0, n.describe(), ": output size ", w.out[i], " on spatial axis ", i, " is negative");
  }
  return w;
}

ResizePlan resize_plan(const Node& n, const Shape& x, const std::vector<double>* scales,
                       const std::vector<int64_t>* sizes) {
  const bool has_scales = scales && !scales->empty();
  const bool has_sizes = sizes && !sizes->empty();
  SEGMUX_CHECK(has_scales != has_sizes, n.describe(), ": exactly one of 'scales' and 'sizes' must be given");
  ResizePlan p;
  p.out.resize(x.size());
  p.scales.resize(x.size());
  if (has_sizes) {
    SEGMUX_CHECK(sizes->size() == x.size(), n.describe(), ": sizes has ", sizes->size(), " values for rank ", x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      SEGMUX_CHECK((*sizes)[i] >= 0, n.describe(), ": negative output size");
      p.out[i] = (*sizes)[i];
      p.scales[i] = x[i] == 0 ? 1.0 : double(p.out[i]) / double(x[i]);
    }
  } else {
    SEGMUX_CHECK(scales->size() == x.size(), n.describe(), ": scales has ", scales->size(), " values for rank ",
                 x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float s = float((*scales)[i]);
      SEGMUX_CHECK(s > 0 && std::isfinite(s), n.describe(), ": scales must be positive, got ", s);
      p.scales[i] = s;
      const double out = std::floor(double(float(x[i]) * s));
      SEGMUX_CHECK(out < double(int64_t(1) << 48), n.describe(), ": scale ", s, " makes the output too large");
      p.out[i] = int64_t(out);
    }
  }
  return p;
}

Shape broadcast_shapes(const Node& n, const Shape& a, const Shape& b) {
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
      fail(n.describe(), ": shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast together");
  }
  return out;
}

}  // namespace segmux::ir::shape_math

namespace segmux::ir::shape_math {

EinsumPlan einsum_plan(const Node& n, const std::vector<Shape>& inputs) {
  std::string eq;
  for (char c : n.attr_string("equation", ""))
    if (c != ' ') eq += c;
  SEGMUX_CHECK(!eq.empty(), n.describe(), ": attribute 'equation' is missing");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t p = 0;;) {
    size_t q = lhs.find(',', p);
    terms.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  SEGMUX_CHECK(terms.size() == inputs.size(), n.describe(), ": equation '", eq, "' has ", terms.size(),
               " operands but the node has ", inputs.size(), " inputs");
  // Labels 0..51 are letters; 52.. are the "..." dims, right-aligned.
  auto letter_id = [&](char c) -> int {
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= 'A' && c <= 'Z') return c - 'A';
    fail(n.describe(), ": equation '", eq, "' has the invalid character '", c, "'");
  };
  auto ell_count = [&](const std::string& t, int64_t rank) -> int64_t {
    size_t e = t.find("...");
    if (e == std::string::npos) return -1;
    SEGMUX_CHECK(t.find("...", e + 3) == std::string::npos, n.describe(), ": more than one '...' in '", t, "'");
    return rank - int64_t(t.size() - 3);
  };
  int64_t max_ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t e = ell_count(terms[i], int64_t(inputs[i].size()));
    max_ell = std::max(max_ell, e);
  }
  EinsumPlan p;
  p.label_size.assign(size_t(52 + max_ell), -1);
  std::vector<int> count(p.label_size.size(), 0);
  auto bind = [&](int label, int64_t size, bool ellipsis) {
    int64_t& s = p.label_size[size_t(label)];
    if (s < 0 || (ellipsis && s == 1))
      s = size;
    else if (!(ellipsis && size == 1))
      SEGMUX_CHECK(s == size, n.describe(), ": equation '", eq, "' gives one label the sizes ", s, " and ", size);
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    const int64_t e = ell_count(t, int64_t(inputs[i].size()));
    const int64_t letters = int64_t(t.size()) - (e >= 0 ? 3 : 0);
    SEGMUX_CHECK(e >= 0 ? e >= 0 && letters + e == int64_t(inputs[i].size()) : letters == int64_t(inputs[i].size()),
                 n.describe(), ": operand '", t, "' does not match input ", i, " of rank ", inputs[i].size());
    std::vector<int> labels;
    size_t dim = 0;
    for (size_t c = 0; c < t.size();) {
      if (t.compare(c, 3, "...") == 0) {
        for (int64_t k = 0; k < e; ++k) {
          int label = int(52 + max_ell - e + k);
          bind(label, inputs[i][dim++], true);
          labels.push_back(label);
          ++count[size_t(label)];
        }
        c += 3;
        continue;
      }
      int label = letter_id(t[c]);
      bind(label, inputs[i][dim++], false);
      labels.push_back(label);
      ++count[size_t(label)];
      ++c;
    }
    p.input_labels.push_back(labels);
  }
  if (arrow == std::string::npos) {
    for (int64_t k = 0; k < max_ell; ++k) p.output_labels.push_back(int(52 + k));
    // Implicit output: letters used exactly once, in alphabetical (ASCII) order.
    for (int l = 0; l < 52; ++l)
      if (count[size_t(l)] == 1) p.output_labels.push_back(l);
  } else {
    const std::string rhs = eq.substr(arrow + 2);
    std::vector<char> used(p.label_size.size(), 0);
    for (size_t c = 0; c < rhs.size();) {
      if (rhs.compare(c, 3, "...") == 0) {
        for (int64_t k = 0; k < max_ell; ++k) p.output_labels.push_back(int(52 + k));
        c += 3;
        continue;
      }
      int label = letter_id(rhs[c]);
      SEGMUX_CHECK(count[size_t(label)] > 0, n.describe(), ": output label '", rhs[c], "' is not in any input");
      SEGMUX_CHECK(!used[size_t(label)], n.describe(), ": output label '", rhs[c], "' repeats");
      used[size_t(label)] = 1;
      p.output_labels.push_back(label);
      ++c;
    }
  }
  for (int l : p.output_labels) p.out.push_back(p.label_size[size_t(l)]);
  return p;
}

}  // namespace segmux::ir::shape_math
