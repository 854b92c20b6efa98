// What `segmux track` writes for every emitted frame:
//   DIR/masks/NNNNN.png  instance-id mask, 16-bit grayscale: 0 = background, obj_id + 1 elsewhere
//                        (16-bit because ids are never reused and can exceed 254 on long videos)
//   DIR/tracks.json      per frame: ids, scores, boxes, COCO run-length-encoded masks
//   DIR/overlay.gif|mp4  the frames with coloured masks, boxes and ids
// Every file is written atomically: a failure leaves nothing half-written.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/video_io.h"

namespace segmux::pipeline {

struct ObjectOutput {
  int64_t id = 0;
  float score = 0;                      // the official out_probs value (detector score at creation)
  std::array<float, 4> box_xywh{};      // normalised to [0,1], from the binary mask (official layout)
  std::vector<uint8_t> mask;            // height x width, row-major, 0/1
};

struct FrameOutput {
  int frame_index = 0;
  int width = 0, height = 0;            // video resolution
  std::vector<ObjectOutput> objects;
};

// Column-major COCO uncompressed RLE (counts start with a run of zeros), as the official tools.
std::vector<uint32_t> mask_to_coco_rle(const std::vector<uint8_t>& mask, int height, int width);
std::vector<uint8_t> coco_rle_to_mask(const std::vector<uint32_t>& counts, int height, int width);
// Box of a binary mask as normalised xywh, the official way (w = (max_x - min_x) / W); zeros if empty.
std::array<float, 4> mask_box_xywh(const std::vector<uint8_t>& mask, int height, int width);

// Colour of an object id in overlays (stable across frames and runs).
std::array<uint8_t, 3> id_color(int64_t id);
// Draws coloured masks (alpha 0.5), box outlines and id labels onto a copy of the frame.
RgbImage draw_overlay(const RgbImage& frame, const FrameOutput& out);

struct OutputOptions {
  bool write_masks = true;
  bool write_json = true;
  std::string overlay_path;  // "" = none; ".gif" or a video extension
  double fps = 25;
  std::string prompt;        // recorded in the JSON
  std::string source;        // recorded in the JSON
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
