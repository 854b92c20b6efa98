// Frames pushed one at a time by the caller (a camera, a stream): the frame count is what has been
// pushed so far and grows between calls, as the official predictor's num_frames grows when a
// streaming caller appends frames to its inference state. Only the last `keep` frames are held, so
// memory stays bounded however long the stream runs; asking for an older frame is an error naming it.
#pragma once
#include <cstdint>
#include <deque>

#include "pipeline/media/frame_source.h"

namespace segmux::pipeline {

class LiveFrameSource : public FrameSource {
 public:
  LiveFrameSource(int width, int height, int keep);
  int num_frames() const override { return pushed_; }
  int width() const override { return width_; }
  int height() const override { return height_; }
  RgbFrame frame(int index) override;
  // Appends RGB u8 rows (width*3 bytes each, `stride` bytes apart); returns the new frame's index.
  int push(const uint8_t* rgb, int width, int height, size_t stride);

 private:
  int width_, height_, keep_;
  int pushed_ = 0;
  std::deque<RgbFrame> held_;  // frames pushed_-held_.size() .. pushed_-1
};

}  // namespace segmux::pipeline
