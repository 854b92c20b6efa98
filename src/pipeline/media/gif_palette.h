// A GIF palette made for the frames it shows, through libavfilter: pass 1 feeds every frame to
// palettegen (a colour histogram, bounded memory) and yields one palette of up to 256 colours; pass 2
// maps each frame onto it with paletteuse (error-diffusion dithering). The frames must be given
// again for pass 2: GifWriter keeps them in a temporary file in between.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "pipeline/media/video_io.h"

struct AVFilterGraph;
struct AVFilterContext;
struct AVFrame;

namespace segmux::pipeline {

struct PalettedFrame {
  std::vector<uint8_t> indices;                 // row-major width x height
  std::vector<std::array<uint8_t, 3>> palette;  // 256 entries
};

class GifPalette {
 public:
  GifPalette(int width, int height);
  ~GifPalette();
  GifPalette(const GifPalette&) = delete;
  GifPalette& operator=(const GifPalette&) = delete;

  void add_for_palette(const RgbImage& frame);  // pass 1
  // Pass 2, after every pass-1 frame: frames in the same order; each call returns the frames that
  // came out (paletteuse may hold one back), finish_mapping() the rest.
  std::vector<PalettedFrame> map(const RgbImage& frame);
  std::vector<PalettedFrame> finish_mapping();

 private:
  void start_mapping();
  void push(AVFilterContext* src, const RgbImage* frame);
  std::vector<PalettedFrame> drain();
  int width_, height_;
  int64_t pts_ = 0;
  AVFilterGraph* graph_ = nullptr;
  AVFilterContext *src_ = nullptr, *pal_src_ = nullptr, *sink_ = nullptr;
  AVFrame* palette_ = nullptr;  // palettegen's output, once pass 1 is over
  AVFrame* out_ = nullptr;
};

}  // namespace segmux::pipeline
