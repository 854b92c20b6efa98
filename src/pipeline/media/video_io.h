// Reading videos (MP4/MOV/WebM/... through libavformat/libavcodec), animated GIFs (giflib) and
// folders of frames (PNG/JPEG/... decoded through libavcodec), and writing frames back out.
// Frames are RGB u8, row-major HxWx3. Readers decode lazily and keep at most a small window of
// decoded frames, so memory stays bounded on long videos.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/media/frame_source.h"

namespace segmux::pipeline {

using RgbImage = RgbFrame;

// Limits on what a media file may make us allocate, checked before allocating (a few hostile bytes can
// declare any size): a frame, an image or a GIF canvas holds at most 64 Mpixel (e.g. 8192x8192), and a
// GIF's frames together at most 1 Gpixel of palette indices (all its frames are decoded at open).
constexpr int64_t kMaxFramePixels = int64_t(64) << 20;
constexpr int64_t kMaxGifTotalPixels = int64_t(1) << 30;

inline uint8_t* pixel_at(RgbImage& img, int x, int y) {
  return &img.pixels[(size_t(y) * size_t(img.width) + size_t(x)) * 3];
}
inline const uint8_t* pixel_at(const RgbImage& img, int x, int y) {
  return &img.pixels[(size_t(y) * size_t(img.width) + size_t(x)) * 3];
}

// A video file or frame folder as the predictor's FrameSource (frame(i) is RGB at original size;
// sequential access is fastest, random access seeks).
class VideoReader : public FrameSource {
 public:
  virtual double fps() const = 0;            // frames per second (folders: 25 unless given)
  virtual std::string describe() const = 0;  // "video.mp4: 120 frames 640x480 @ 30 fps (h264)"
  // Frame i's presentation time in seconds: the container's pts x time base (as ffprobe's pts_time),
  // a GIF's summed frame delays, a folder's i / fps when a frame rate was given; nullopt when unknown.
  virtual std::optional<double> time_s(int index) const { return std::nullopt; }
};

// Picks the reader by what the path is: a directory -> frame folder (files sorted by name, image
// extensions only), *.gif -> GIF reader, anything else -> libav. Errors name the path and problem.
// folder_fps: the frame rate of a frame folder (> 0; 0 = unknown: no timestamps, 25 fps for overlays);
// ignored for files, which carry their own.
std::unique_ptr<VideoReader> open_video(const std::string& path, double folder_fps = 0);

// Single images.
RgbImage read_image(const std::string& path);                      // PNG/JPEG/BMP/... through libavcodec
void write_png_rgb(const std::string& path, const RgbImage& img);  // atomic
void write_png_gray(const std::string& path, int width, int height, const std::vector<uint16_t>& values,
                    bool sixteen_bit);  // atomic
// Indexed-colour PNG (8-bit indices into a palette of at most 256 RGB entries). Atomic.
void write_png_palette(const std::string& path, int width, int height, const std::vector<uint8_t>& indices,
                       const std::vector<std::array<uint8_t, 3>>& palette);

// Writes an animated GIF (one palette of up to 256 colours made for its frames by libavfilter's
// palettegen, mapped with paletteuse: gif_palette.h) or a video file (libav; MP4
// with H.264 when the encoder exists, else MPEG-4 Part 2). Chosen by extension. Atomic: frames go
// to a temporary file renamed at finish().
class VideoWriter {
 public:
  virtual ~VideoWriter() = default;
  virtual void add(const RgbImage& frame) = 0;
  virtual void finish() = 0;
};
std::unique_ptr<VideoWriter> open_video_writer(const std::string& path, int width, int height, double fps);

}  // namespace segmux::pipeline
