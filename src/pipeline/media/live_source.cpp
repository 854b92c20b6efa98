#include "pipeline/media/live_source.h"

#include <cstring>

#include "core/error.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

LiveFrameSource::LiveFrameSource(int width, int height, int keep) : width_(width), height_(height), keep_(keep) {
  SEGMUX_CHECK(width > 0 && height > 0 && int64_t(width) * height <= kMaxFramePixels, "live frames of ", width, "x",
               height, " are not a usable frame size (at most ", kMaxFramePixels, " pixels)");
  SEGMUX_CHECK(keep >= 1, "a live source must keep at least 1 frame (asked to keep ", keep, ")");
}

RgbFrame LiveFrameSource::frame(int index) {
  const int first = pushed_ - int(held_.size());
  SEGMUX_CHECK(index >= 0 && index < pushed_, "frame ", index, " has not been pushed (", pushed_, " frames so far)");
  SEGMUX_CHECK(index >= first, "frame ", index, " is no longer held (the live session keeps the last ", keep_,
               " frames: ", first, "..", pushed_ - 1, ")");
  return held_[size_t(index - first)];
}

int LiveFrameSource::push(const uint8_t* rgb, int width, int height, size_t stride) {
  SEGMUX_CHECK(rgb != nullptr, "push_frame: no pixels");
  SEGMUX_CHECK(width == width_ && height == height_, "push_frame: the frame is ", width, "x", height,
               " but the live session was opened for ", width_, "x", height_);
  const size_t row = size_t(width) * 3;
  if (stride == 0) stride = row;
  SEGMUX_CHECK(stride >= row, "push_frame: a row stride of ", stride, " bytes is shorter than a row (", row, ")");
  RgbFrame f{width, height, std::vector<uint8_t>(row * size_t(height))};
  for (int y = 0; y < height; ++y) std::memcpy(&f.pixels[size_t(y) * row], rgb + size_t(y) * stride, row);
  held_.push_back(std::move(f));
  if (int(held_.size()) > keep_) held_.pop_front();
  return pushed_++;
}

}  // namespace segmux::pipeline
