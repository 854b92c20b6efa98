#include "pipeline/media/sample_video.h"

#include <cmath>

namespace segmux::pipeline {

RgbImage sample_frame(int index, int width, int height) {
  RgbImage img;
  img.width = width;
  img.height = height;
  img.pixels.resize(size_t(width) * size_t(height) * 3);
  const double t = index / 10.0, w = width, h = height;
  // Disc moving right, square moving down, triangle orbiting.
  const double dx = w * (0.2 + 0.5 * std::fmod(t * 0.35, 1.0)), dy = h * 0.35, dr = h * 0.14;
  const double sx = w * 0.7, sy = h * (0.15 + 0.5 * std::fmod(t * 0.25, 1.0)), ss = h * 0.12;
  const double tx = w * (0.45 + 0.25 * std::cos(t)), ty = h * (0.7 + 0.15 * std::sin(t)), ts = h * 0.15;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint8_t* p = pixel_at(img, x, y);
      p[0] = uint8_t(40 + 60 * y / height);
      p[1] = uint8_t(60 + 40 * x / width);
      p[2] = uint8_t(90);
      if ((x - dx) * (x - dx) + (y - dy) * (y - dy) < dr * dr) p[0] = 220, p[1] = 40, p[2] = 40;
      if (std::abs(x - sx) < ss && std::abs(y - sy) < ss) p[0] = 40, p[1] = 70, p[2] = 220;
      double u = (y - (ty - ts)) / (2 * ts);
      if (u >= 0 && u <= 1 && std::abs(x - tx) < u * ts) p[0] = 50, p[1] = 200, p[2] = 60;
    }
  return img;
}

void write_sample_video(const std::string& path, int frames, int width, int height) {
  auto w = open_video_writer(path, width, height, 10);
  for (int i = 0; i < frames; ++i) w->add(sample_frame(i, width, height));
  w->finish();
}

}  // namespace segmux::pipeline
