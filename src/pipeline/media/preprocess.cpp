#include "pipeline/media/preprocess.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

// Pillow's 8-bit resampling precision: coefficients are fixed point with this many fraction bits.
constexpr int kPrecisionBits = 32 - 8 - 2;

struct Coefficients {
  int ksize = 0;
  std::vector<int> bounds;  // per output pixel: first input index, count
  std::vector<int32_t> k;   // per output pixel: ksize fixed-point weights
};

// Pillow precompute_coeffs + normalize_coeffs_8bpc for the bilinear (triangle) filter, support 1.
Coefficients bilinear_coefficients(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  Coefficients c;
  c.ksize = int(std::ceil(support)) * 2 + 1;
  c.bounds.resize(size_t(out_size) * 2);
  c.k.assign(size_t(out_size) * size_t(c.ksize), 0);
  std::vector<double> w(size_t(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = int(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = int(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double total = 0;
    for (int x = 0; x < xmax; ++x) {
      double t = std::abs((x + xmin - center + 0.5) * ss);
      w[size_t(x)] = t < 1.0 ? 1.0 - t : 0.0;
      total += w[size_t(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      double v = total != 0.0 ? w[size_t(x)] / total : w[size_t(x)];
      c.k[size_t(xx) * size_t(c.ksize) + size_t(x)] =
          int32_t(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[size_t(xx) * 2] = xmin;
    c.bounds[size_t(xx) * 2 + 1] = xmax;
  }
  return c;
}

inline uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

RgbImage resize_bilinear_pil(const RgbImage& in, int out_w, int out_h) {
  SEGMUX_CHECK(in.width > 0 && in.height > 0 && out_w > 0 && out_h > 0, "resize: bad sizes ", in.width, "x", in.height,
               " -> ", out_w, "x", out_h);
  const bool need_h = out_w != in.width, need_v = out_h != in.height;
  Coefficients ch = bilinear_coefficients(in.width, out_w);
  Coefficients cv = bilinear_coefficients(in.height, out_h);
  // Horizontal pass over only the rows the vertical pass reads (as Pillow does).
  const int y_first = cv.bounds[0];
  const int y_last = cv.bounds[size_t(out_h) * 2 - 2] + cv.bounds[size_t(out_h) * 2 - 1];
  RgbImage tmp;
  const RgbImage* src = &in;
  int row_offset = 0;
  if (need_h) {
    tmp.width = out_w;
    tmp.height = y_last - y_first;
    tmp.pixels.resize(size_t(tmp.width) * size_t(tmp.height) * 3);
    for (int y = 0; y < tmp.height; ++y)
      for (int xx = 0; xx < out_w; ++xx) {
        const int xmin = ch.bounds[size_t(xx) * 2], xn = ch.bounds[size_t(xx) * 2 + 1];
        const int32_t* k = &ch.k[size_t(xx) * size_t(ch.ksize)];
        for (int c = 0; c < 3; ++c) {
          int64_t s = int64_t(1) << (kPrecisionBits - 1);
          for (int x = 0; x < xn; ++x) s += int64_t(pixel_at(in, x + xmin, y + y_first)[c]) * k[x];
          pixel_at(tmp, xx, y)[c] = clip8(s);
        }
      }
    src = &tmp;
    row_offset = y_first;
  }
  if (!need_v) return need_h ? tmp : in;
  RgbImage out;
  out.width = src->width;
  out.height = out_h;
  out.pixels.resize(size_t(out.width) * size_t(out_h) * 3);
  for (int yy = 0; yy < out_h; ++yy) {
    const int ymin = cv.bounds[size_t(yy) * 2] - row_offset, yn = cv.bounds[size_t(yy) * 2 + 1];
    const int32_t* k = &cv.k[size_t(yy) * size_t(cv.ksize)];
    for (int x = 0; x < out.width; ++x)
      for (int c = 0; c < 3; ++c) {
        int64_t s = int64_t(1) << (kPrecisionBits - 1);
        for (int y = 0; y < yn; ++y) s += int64_t(pixel_at(*src, x, y + ymin)[c]) * k[y];
        pixel_at(out, x, yy)[c] = clip8(s);
      }
  }
  return out;
}

Tensor normalize_for_model(const RgbImage& img) {
  Tensor t(DType::f32, {1, 3, img.height, img.width});
  float* d = t.data<float>();
  const size_t plane = size_t(img.width) * size_t(img.height);
  // The official loader works in float16 throughout: x/255, then (x - 0.5) / 0.5, each rounded to f16.
  auto f16 = [](float v) { return f16_to_f32(f32_to_f16(v)); };
  for (size_t i = 0; i < plane; ++i)
    for (size_t c = 0; c < 3; ++c) {
      float v = f16(float(img.pixels[i * 3 + c]) / 255.0f);
      d[c * plane + i] = f16(f16(v - 0.5f) / 0.5f);
    }
  return t;
}

Tensor preprocess_frame(const RgbImage& frame, int image_size) {
  return normalize_for_model(resize_bilinear_pil(frame, image_size, image_size));
}

}  // namespace segmux::pipeline
