// What `segmux track` writes for every emitted frame:
//   DIR/masks/NNNNN.png  instance-id mask, 16-bit grayscale: 0 = background, obj_id + 1 elsewhere
//                        (16-bit because ids are never reused and can exceed 254 on long videos)
//   DIR/tracks.json      per frame: ids, scores, boxes (normalised xywh, official), COCO RLE masks
//   DIR/overlay.gif|mp4  the frames with coloured masks, boxes and ids
// Every file is written atomically: a failure leaves nothing half-written.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/media/video_io.h"
#include "pipeline/predictor/control_plane.h"

namespace segmux::pipeline {

// Draws coloured masks (alpha 0.5), box outlines and id labels onto a copy of the frame.
std::array<uint8_t, 3> id_color(int64_t id);  // stable colour of an object id
RgbImage draw_overlay(const RgbImage& frame, const FrameOutput& out);

struct OutputOptions {
  bool write_masks = true;
  bool write_json = true;
  std::string overlay_path;  // "" = none; ".gif" or a video extension
  double fps = 25;
  std::string prompt;  // recorded in the JSON
  std::vector<std::string> prompts;  // every concept's prompt (recorded as "prompts" when > 1)
  std::string source;  // recorded in the JSON
};

class TrackWriter {
 public:
  TrackWriter(const std::string& out_dir, int width, int height, const OutputOptions& opt);
  ~TrackWriter();
  // Frames may come in any order (backward propagation); each frame once.
  void add(const RgbImage& frame, const FrameOutput& out);
  // Closes the JSON and the overlay and moves them into place. Without finish() nothing is left.
  void finish();
  int frames_written() const { return frames_; }

 private:
  std::string dir_, json_tmp_;
  int width_, height_;
  OutputOptions opt_;
  FILE* json_ = nullptr;
  std::unique_ptr<VideoWriter> overlay_;
  int frames_ = 0;
};

}  // namespace segmux::pipeline
