#include "pipeline/media/frame_source.h"

#include "core/error.h"

namespace segmux::pipeline {

namespace {
class BlankFrameSource : public FrameSource {
 public:
  BlankFrameSource(int n, int w, int h) : n_(n), w_(w), h_(h) {
    SEGMUX_CHECK(n >= 0 && w > 0 && h > 0, "blank frame source: bad size ", n, " frames of ", w, "x", h);
  }
  int num_frames() const override { return n_; }
  int width() const override { return w_; }
  int height() const override { return h_; }
  RgbFrame frame(int index) override {
    SEGMUX_CHECK(index >= 0 && index < n_, "frame ", index, " out of range (", n_, " frames)");
    return RgbFrame{w_, h_, std::vector<uint8_t>(size_t(w_) * size_t(h_) * 3, 0)};
  }

 private:
  int n_, w_, h_;
};
}  // namespace

std::unique_ptr<FrameSource> make_blank_frame_source(int num_frames, int width, int height) {
  return std::make_unique<BlankFrameSource>(num_frames, width, height);
}

}  // namespace segmux::pipeline
