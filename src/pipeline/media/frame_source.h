// Where the predictor gets video frames from. Readers for MP4/GIF/frame folders (src/pipeline/video_io*)
// implement this; tests use in-memory sources.
#pragma once
#include <memory>
#include <string>

#include "pipeline/backends/model.h"

namespace segmux::pipeline {

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  virtual int num_frames() const = 0;
  virtual int width() const = 0;  // original size of every frame
  virtual int height() const = 0;
  // Frame i (0-based) as RGB u8 height x width x 3. Out-of-range i -> segmux::Error.
  virtual RgbFrame frame(int index) = 0;
};

// A source of blank frames of a given size (for replay runs, where the backend ignores pixels).
std::unique_ptr<FrameSource> make_blank_frame_source(int num_frames, int width, int height);

}  // namespace segmux::pipeline
