// What `segmux track` writes for every emitted frame:
//   DIR/masks/NNNNN.png  instance-id mask, 16-bit grayscale: 0 = background, obj_id + 1 elsewhere
//                        (16-bit because ids are never reused and can exceed 254 on long videos;
//                        viewers show it black)
//   DIR/masks_color/NNNNN.png  optional: the same mask as an indexed-colour PNG to look at, each
//                        object in its overlay colour (id_color) on black
//   DIR/tracks.json      per frame: time, ids, scores, boxes (normalised xywh, official), COCO RLE masks
//                        (compressed string counts by default; tracks_json.h)
//   DIR/overlay.gif|mp4  the frames with coloured masks, boxes and ids
//   DIR/ytvis_results.json ...  optional evaluation and annotation formats made from tracks.json
//                        (eval_exports.h)
// Every file is written atomically: a failure leaves nothing half-written.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/files.h"
#include "pipeline/media/video_io.h"
#include "pipeline/outputs/eval_exports.h"
#include "pipeline/outputs/tracks_json.h"
#include "pipeline/predictor/control_plane.h"

namespace segmux::pipeline {

// Draws coloured masks (alpha 0.5), boxes around the visible masks and id labels (label_font.h) onto
// a copy of the frame.
std::array<uint8_t, 3> id_color(int64_t id);  // stable colour of an object id
RgbImage draw_overlay(const RgbImage& frame, const FrameOutput& out);
// masks_color/ PNG from a frame's id plane (0 = background, obj_id + 1) and the frame's object ids.
void write_color_mask(const std::string& path, int width, int height, const std::vector<uint16_t>& ids,
                      const std::vector<int64_t>& obj_ids);
// Inclusive pixel box {x0, y0, x1, y1} of a mask's pixels; x1 < x0 when the mask is empty.
std::array<int, 4> visible_box(const BinaryMask& mask);

struct OutputOptions {
  bool write_masks = true;
  bool color_masks = false;  // also masks_color/NNNNN.png
  bool write_json = true;
  RleForm rle = RleForm::compressed;
  std::string overlay_path;  // "" = none; ".gif" or a video extension
  double fps = 25;
  std::string prompt;                 // recorded in the JSON
  std::vector<std::string> prompts;   // every concept's prompt (recorded as "prompts" when > 1)
  std::string source;                 // recorded in the JSON
  std::vector<ExportFormat> formats;  // made from tracks.json at finish() (needs write_json)
  ExportContext export_context;
};

class TrackWriter {
 public:
  TrackWriter(const std::string& out_dir, int width, int height, const OutputOptions& opt);
  ~TrackWriter();
  // Frames may come in any order (backward propagation); each frame once. time_s: the frame's
  // presentation time in seconds, when the input has one.
  void add(const RgbImage& frame, const FrameOutput& out, std::optional<double> time_s = std::nullopt);
  // Closes the JSON and the overlay and moves them into place. Without finish() nothing is left.
  void finish();
  int frames_written() const { return frames_; }

 private:
  std::string dir_;
  int width_, height_;
  OutputOptions opt_;
  std::unique_ptr<AtomicFile> json_;  // tracks.json, renamed into place by finish()
  std::unique_ptr<VideoWriter> overlay_;
  int frames_ = 0;
};

}  // namespace segmux::pipeline
