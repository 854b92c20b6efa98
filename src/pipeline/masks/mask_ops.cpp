#include "pipeline/masks/mask_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/tensor_ops.h"

namespace segmux::pipeline {

MaskStack MaskStack::select(const std::vector<int>& rows) const {
  MaskStack out(int(rows.size()), height, width);
  for (size_t i = 0; i < rows.size(); ++i) {
    SEGMUX_CHECK(rows[i] >= 0 && rows[i] < count, "mask row ", rows[i], " out of range (", count, " masks)");
    std::memcpy(out.mask(int(i)), mask(rows[i]), plane() * sizeof(float));
  }
  return out;
}

void MaskStack::append(const MaskStack& other) {
  if (other.count == 0) return;
  if (count == 0) {
    height = other.height;
    width = other.width;
  }
  SEGMUX_CHECK(other.height == height && other.width == width, "cannot stack masks of ", other.height, "x", other.width,
               " onto masks of ", height, "x", width);
  values.insert(values.end(), other.values.begin(), other.values.end());
  count += other.count;
}

MaskStack MaskStack::from_tensor(const Tensor& t, const char* what) {
  SEGMUX_CHECK(t.defined(), what, ": tensor is missing");
  SEGMUX_CHECK(t.rank() == 3 || (t.rank() == 4 && t.dim(1) == 1), what, ": expected masks [N,H,W] or [N,1,H,W], got ",
               shape_str(t.shape()));
  Tensor f = as_f32(t);
  MaskStack m(int(f.dim(0)), int(f.dim(-2)), int(f.dim(-1)));
  if (!m.values.empty()) std::memcpy(m.values.data(), f.raw(), m.values.size() * sizeof(float));
  return m;
}

Tensor MaskStack::to_tensor() const {
  Tensor t(DType::f32, {count, height, width});
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(float));
  return t;
}

namespace {
// PyTorch's source-index computation for align_corners=False (area_pixel_compute_source_index).
struct Tap {
  int i0, i1;
  float l0, l1;
};
std::vector<Tap> bilinear_taps(int in, int out) {
  std::vector<Tap> taps(size_t(std::max(out, 0)));
  const float scale = float(in) / float(out);
  for (int o = 0; o < out; ++o) {
    float src = scale * (float(o) + 0.5f) - 0.5f;
    if (src < 0.f) src = 0.f;
    int i0 = int(src);
    if (i0 > in - 1) i0 = in - 1;
    int step = i0 < in - 1 ? 1 : 0;
    float l1 = src - float(i0);
    taps[size_t(o)] = {i0, i0 + step, 1.f - l1, l1};
  }
  return taps;
}
}  // namespace

void resize_bilinear(const float* src, int src_h, int src_w, float* dst, int dst_h, int dst_w) {
  SEGMUX_CHECK(src_h > 0 && src_w > 0 && dst_h > 0 && dst_w > 0, "resize_bilinear: bad sizes ", src_h, "x", src_w,
               " -> ", dst_h, "x", dst_w);
  if (src_h == dst_h && src_w == dst_w) {
    std::memcpy(dst, src, size_t(src_h) * size_t(src_w) * sizeof(float));
    return;
  }
  const auto ty = bilinear_taps(src_h, dst_h);
  const auto tx = bilinear_taps(src_w, dst_w);
  for (int y = 0; y < dst_h; ++y) {
    const Tap& a = ty[size_t(y)];
    const float* r0 = src + size_t(a.i0) * size_t(src_w);
    const float* r1 = src + size_t(a.i1) * size_t(src_w);
    float* out = dst + size_t(y) * size_t(dst_w);
    for (int x = 0; x < dst_w; ++x) {
      const Tap& b = tx[size_t(x)];
      out[x] = a.l0 * (b.l0 * r0[b.i0] + b.l1 * r0[b.i1]) + a.l1 * (b.l0 * r1[b.i0] + b.l1 * r1[b.i1]);
    }
  }
}

MaskStack resize_bilinear(const MaskStack& masks, int dst_h, int dst_w) {
  MaskStack out(masks.count, dst_h, dst_w);
  for (int i = 0; i < masks.count; ++i)
    resize_bilinear(masks.mask(i), masks.height, masks.width, out.mask(i), dst_h, dst_w);
  return out;
}

namespace {
std::vector<std::vector<uint8_t>> binarize_all(const MaskStack& m, const std::vector<bool>* valid) {
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(m.count));
  for (int i = 0; i < m.count; ++i) {
    auto& b = out[size_t(i)];
    b.assign(m.plane(), 0);
    if (valid && !(*valid)[size_t(i)]) continue;
    const float* p = m.mask(i);
    for (size_t k = 0; k < m.plane(); ++k) b[k] = p[k] > 0.f;
  }
  return out;
}
int64_t count_ones(const std::vector<uint8_t>& b) { return std::accumulate(b.begin(), b.end(), int64_t(0)); }
int64_t count_and(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int64_t n = 0;
  for (size_t k = 0; k < a.size(); ++k) n += a[k] & b[k];
  return n;
}
}  // namespace

std::vector<float> pairwise_overlap(const MaskStack& a, const MaskStack& b, Overlap kind,
                                    const std::vector<bool>* a_valid) {
  SEGMUX_CHECK(a.count == 0 || b.count == 0 || (a.height == b.height && a.width == b.width),
               "pairwise_overlap: mask sizes differ (", a.height, "x", a.width, " vs ", b.height, "x", b.width, ")");
  SEGMUX_CHECK(!a_valid || a_valid->size() == size_t(a.count), "pairwise_overlap: validity flags for ",
               a_valid ? a_valid->size() : 0, " of ", a.count, " masks");
  auto ba = binarize_all(a, a_valid);
  auto bb = binarize_all(b, nullptr);
  std::vector<int64_t> area_a(ba.size()), area_b(bb.size());
  for (size_t i = 0; i < ba.size(); ++i) area_a[i] = count_ones(ba[i]);
  for (size_t j = 0; j < bb.size(); ++j) area_b[j] = count_ones(bb[j]);
  std::vector<float> out(size_t(a.count) * size_t(b.count), 0.f);
  for (size_t i = 0; i < ba.size(); ++i) {
    for (size_t j = 0; j < bb.size(); ++j) {
      float inter = (area_a[i] == 0 || area_b[j] == 0) ? 0.f : float(count_and(ba[i], bb[j]));
      float v;
      if (kind == Overlap::IoU) {
        float uni = float(area_a[i]) + float(area_b[j]) - inter;
        v = inter / std::max(uni, 1.f);
      } else {
        v = inter / (float(std::min(area_a[i], area_b[j])) + 1e-8f);
      }
      out[i * size_t(b.count) + j] = v;
    }
  }
  return out;
}

std::vector<float> self_overlap_for_nms(const MaskStack& masks, Overlap kind, bool iom_over_row_area) {
  auto bm = binarize_all(masks, nullptr);
  const size_t n = bm.size();
  std::vector<int64_t> area(n);
  for (size_t i = 0; i < n; ++i) area[i] = count_ones(bm[i]);
  std::vector<float> out(n * n, 0.f);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      float inter = float(count_and(bm[i], bm[j]));
      float denom = kind == Overlap::IoU ? float(area[i]) + float(area[j]) - inter
                    : iom_over_row_area  ? float(area[i])
                                         : float(std::min(area[i], area[j]));
      out[i * n + j] = inter / (denom + 1e-8f);
    }
  }
  return out;
}

std::vector<bool> nms_masks(const std::vector<float>& probs, const MaskStack& masks, float prob_threshold,
                            float overlap_threshold, Overlap kind, NmsVariant variant) {
  const size_t n = probs.size();
  SEGMUX_CHECK(masks.count == int(n), "nms_masks: ", n, " scores but ", masks.count, " masks");
  // Only candidates above the score threshold can keep or suppress anything, so overlaps are computed
  // among them alone (a few of the detector's queries rather than all of them).
  std::vector<int> cand;
  for (size_t i = 0; i < n; ++i)
    if (probs[i] > prob_threshold) cand.push_back(int(i));
  // Descending score order; torch's argsort is not stable but ties between distinct float scores do not
  // occur in practice, and equal scores fall back to index order here.
  std::stable_sort(cand.begin(), cand.end(), [&](int a, int b) { return probs[size_t(a)] > probs[size_t(b)]; });
  MaskStack sub = masks.select(cand);
  const bool single = variant == NmsVariant::single_frame;
  auto overlap = self_overlap_for_nms(sub, kind, single && kind == Overlap::IoM);
  const size_t m = cand.size();
  std::vector<bool> keep_sorted(m, true);
  for (size_t i = 0; i < m; ++i) {
    if (!keep_sorted[i] && !single) continue;  // single_frame: suppressed candidates still suppress
    for (size_t j = i + 1; j < m; ++j)
      if (overlap[i * m + j] > overlap_threshold) keep_sorted[j] = false;
  }
  std::vector<bool> keep(n, false);
  for (size_t i = 0; i < m; ++i) keep[size_t(cand[i])] = keep_sorted[i];
  return keep;
}

std::vector<bool> boxes_away_from_boundary(const std::vector<std::array<float, 4>>& boxes, float margin) {
  std::vector<bool> keep(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    float xc = (boxes[i][0] + boxes[i][2]) / 2.f, yc = (boxes[i][1] + boxes[i][3]) / 2.f;
    keep[i] = xc > margin && xc < 1.f - margin && yc > margin && yc < 1.f - margin;
  }
  return keep;
}

std::vector<int> keep_first_order(const std::vector<bool>& keep) {
  std::vector<std::pair<bool, int>> v;
  v.reserve(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) v.emplace_back(keep[i], int(i));
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int> order;
  order.reserve(v.size());
  for (auto& p : v) order.push_back(p.second);
  return order;
}

std::array<float, 4> mask_to_box_xyxy(const BinaryMask& m) {
  int x0 = m.width, y0 = m.height, x1 = 0, y1 = 0;
  bool any = false;
  for (int y = 0; y < m.height; ++y)
    for (int x = 0; x < m.width; ++x)
      if (m.at(y, x)) {
        any = true;
        x0 = std::min(x0, x);
        x1 = std::max(x1, x);
        y0 = std::min(y0, y);
        y1 = std::max(y1, y);
      }
  if (!any) return {0.f, 0.f, 0.f, 0.f};
  return {float(x0), float(y0), float(x1), float(y1)};
}

BinaryMask binarize(const float* logits, int h, int w) {
  BinaryMask m(h, w);
  for (size_t k = 0; k < m.pixels.size(); ++k) m.pixels[k] = logits[k] > 0.f;
  return m;
}

MaskStack suppress_area_shrinkage(const MaskStack& masks) {
  if (masks.count <= 1) return masks;
  const size_t plane = masks.plane();
  std::vector<int64_t> before(size_t(masks.count), 0), after(size_t(masks.count), 0);
  for (size_t k = 0; k < plane; ++k) {
    int best = 0;
    float best_v = masks.mask(0)[k];
    for (int i = 1; i < masks.count; ++i) {
      float v = masks.mask(i)[k];
      if (v > best_v) {  // torch.argmax: first index of the maximum
        best_v = v;
        best = i;
      }
    }
    for (int i = 0; i < masks.count; ++i) {
      float v = masks.mask(i)[k];
      before[size_t(i)] += v > 0.f;
      float kept = i == best ? v : std::min(v, -10.f);
      after[size_t(i)] += kept > 0.f;
    }
  }
  MaskStack out = masks;
  for (int i = 0; i < masks.count; ++i) {
    float ratio = float(after[size_t(i)]) / float(std::max<int64_t>(before[size_t(i)], 1));
    if (ratio >= 0.3f) continue;
    float* p = out.mask(i);
    for (size_t k = 0; k < plane; ++k) p[k] = std::min(p[k], -10.f);
  }
  return out;
}

void object_wise_non_overlap(std::vector<BinaryMask>& masks, const std::vector<float>& scores) {
  SEGMUX_CHECK(masks.size() == scores.size(), "object_wise_non_overlap: ", masks.size(), " masks, ", scores.size(),
               " scores");
  if (masks.size() <= 1) return;
  const size_t plane = masks[0].pixels.size();
  for (auto& m : masks) SEGMUX_CHECK(m.pixels.size() == plane, "object_wise_non_overlap: mask sizes differ");
  std::vector<std::vector<uint8_t>> out(masks.size());
  for (auto& o : out) o.assign(plane, 0);
  for (size_t k = 0; k < plane; ++k) {
    size_t best = 0;
    float best_v = masks[0].pixels[k] ? scores[0] : 0.f;
    for (size_t i = 1; i < masks.size(); ++i) {
      float v = masks[i].pixels[k] ? scores[i] : 0.f;
      if (v > best_v) {
        best_v = v;
        best = i;
      }
    }
    if (masks[best].pixels[k] && best_v > 0.f) out[best][k] = 1;
  }
  for (size_t i = 0; i < masks.size(); ++i) masks[i].pixels = std::move(out[i]);
}

namespace {
// 8-connected component areas; label image holds the area of each pixel's component (0 where !fg).
std::vector<int64_t> component_areas(const std::vector<uint8_t>& fg, int h, int w) {
  std::vector<int> label(fg.size(), -1);
  std::vector<int64_t> areas;
  std::vector<int> stack;
  for (size_t start = 0; start < fg.size(); ++start) {
    if (!fg[start] || label[start] >= 0) continue;
    int id = int(areas.size());
    int64_t count = 0;
    stack.push_back(int(start));
    label[start] = id;
    while (!stack.empty()) {
      int p = stack.back();
      stack.pop_back();
      ++count;
      int py = p / w, px = p % w;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int y = py + dy, x = px + dx;
          if (y < 0 || y >= h || x < 0 || x >= w) continue;
          size_t q = size_t(y) * size_t(w) + size_t(x);
          if (fg[q] && label[q] < 0) {
            label[q] = id;
            stack.push_back(int(q));
          }
        }
    }
    areas.push_back(count);
  }
  std::vector<int64_t> per_pixel(fg.size(), 0);
  for (size_t k = 0; k < fg.size(); ++k)
    if (label[k] >= 0) per_pixel[k] = areas[size_t(label[k])];
  return per_pixel;
}
}  // namespace

void fill_holes_in_mask_scores(MaskStack& masks, int max_area) {
  if (max_area <= 0) return;
  const size_t plane = masks.plane();
  for (int i = 0; i < masks.count; ++i) {
    float* p = masks.mask(i);
    std::vector<uint8_t> bg(plane);
    for (size_t k = 0; k < plane; ++k) bg[k] = p[k] <= 0.f;
    auto bg_area = component_areas(bg, masks.height, masks.width);
    for (size_t k = 0; k < plane; ++k)
      if (bg[k] && bg_area[k] <= max_area) p[k] = 0.1f;
    std::vector<uint8_t> fg(plane);
    int64_t fg_total = 0;
    for (size_t k = 0; k < plane; ++k) fg_total += (fg[k] = p[k] > 0.f);
    const int64_t thresh = std::min<int64_t>(fg_total / 2, max_area);
    auto fg_area = component_areas(fg, masks.height, masks.width);
    for (size_t k = 0; k < plane; ++k)
      if (fg[k] && fg_area[k] <= thresh) p[k] = -0.1f;
  }
}

void fill_small_regions(MaskStack& masks, float threshold, int max_hole_area, int max_sprinkle_area) {
  const size_t plane = masks.plane();
  for (int i = 0; i < masks.count; ++i) {
    float* p = masks.mask(i);
    std::vector<uint8_t> bg(plane), fg(plane);
    for (size_t k = 0; k < plane; ++k) fg[k] = !(bg[k] = p[k] <= threshold);
    std::vector<int64_t> bg_area, fg_area;
    if (max_hole_area > 0) bg_area = component_areas(bg, masks.height, masks.width);
    if (max_sprinkle_area > 0) fg_area = component_areas(fg, masks.height, masks.width);
    for (size_t k = 0; k < plane; ++k) {
      if (max_hole_area > 0 && bg[k] && bg_area[k] <= max_hole_area) p[k] = threshold + 10.f;
      if (max_sprinkle_area > 0 && fg[k] && fg_area[k] <= max_sprinkle_area) p[k] = threshold - 10.f;
    }
  }
}

}  // namespace segmux::pipeline
