#include "pipeline/outputs/outputs.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/outputs/eval_inputs.h"
#include "pipeline/outputs/label_font.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

std::array<uint8_t, 3> id_color(int64_t id) {
  // Golden-ratio hue steps: neighbouring ids get clearly different colours.
  double h = std::fmod(0.11 + double(id) * 0.618033988749895, 1.0) * 6.0;
  double s = 0.75, v = 0.95;
  int i = int(h);
  double f = h - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r, g, b;
  switch (i % 6) {
    case 0:
      r = v, g = t, b = p;
      break;
    case 1:
      r = q, g = v, b = p;
      break;
    case 2:
      r = p, g = v, b = t;
      break;
    case 3:
      r = p, g = q, b = v;
      break;
    case 4:
      r = t, g = p, b = v;
      break;
    default:
      r = v, g = p, b = q;
      break;
  }
  return {uint8_t(r * 255), uint8_t(g * 255), uint8_t(b * 255)};
}

namespace {

// JSON text in valid UTF-8 whatever the strings hold: a file name in Latin-1 (the source path) ended
// the run with a raw "type_error 316"; its invalid bytes become U+FFFD.
std::string utf8_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void fill_rect(RgbImage& img, int x0, int y0, int w, int h, Rgb c) {
  for (int y = std::max(0, y0); y < std::min(img.height, y0 + h); ++y)
    for (int x = std::max(0, x0); x < std::min(img.width, x0 + w); ++x) std::memcpy(pixel_at(img, x, y), c.data(), 3);
}

// Black or white, whichever reads better on `bg` (Rec. 601 luma).
Rgb text_color(Rgb bg) {
  const int luma = (299 * bg[0] + 587 * bg[1] + 114 * bg[2]) / 1000;
  return luma > 150 ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

}  // namespace

void write_color_mask(const std::string& path, int width, int height, const std::vector<uint16_t>& ids,
                      const std::vector<int64_t>& obj_ids) {
  // Palette entry 0 = background; entry k = the k-th object of the frame (by ascending id).
  std::vector<int64_t> sorted = obj_ids;
  std::sort(sorted.begin(), sorted.end());
  std::vector<Rgb> palette{{0, 0, 0}};
  for (int64_t id : sorted) palette.push_back(id_color(id));
  auto entry = [&](uint16_t v) {
    return size_t(std::lower_bound(sorted.begin(), sorted.end(), int64_t(v) - 1) - sorted.begin()) + 1;
  };
  if (palette.size() <= 256) {
    std::vector<uint8_t> indices(ids.size(), 0);
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i]) indices[i] = uint8_t(entry(ids[i]));
    return write_png_palette(path, width, height, indices, palette);
  }
  // More than 255 objects on one frame do not fit a palette: the same colours as RGB.
  RgbImage img;
  img.width = width;
  img.height = height;
  img.pixels.assign(ids.size() * 3, 0);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i]) std::memcpy(&img.pixels[i * 3], palette[entry(ids[i])].data(), 3);
  write_png_rgb(path, img);
}

std::array<int, 4> visible_box(const BinaryMask& mask) {
  if (mask.area() == 0) return {0, 0, -1, -1};
  const auto b = mask_to_box_xyxy(mask);
  return {int(b[0]), int(b[1]), int(b[2]), int(b[3])};
}

RgbImage draw_overlay(const RgbImage& frame, const FrameOutput& out) {
  RgbImage img = frame;
  const int w = img.width, h = img.height;
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    const BinaryMask& m = out.masks[k];
    if (m.width != w || m.height != h) continue;
    auto c = id_color(out.obj_ids[k]);
    for (size_t i = 0; i < m.pixels.size(); ++i)
      if (m.pixels[i])
        for (size_t ch = 0; ch < 3; ++ch) img.pixels[i * 3 + ch] = uint8_t((img.pixels[i * 3 + ch] + c[ch] + 1) / 2);
  }
  // Boxes around what is visible (after the non-overlap rule); tracks.json keeps the official box of
  // the mask before it, which can be much larger than what the frame shows of the object.
  const int line = std::max(1, std::min(w, h) / 160);
  const int text_px = std::max(12, std::min(w, h) / 30);
  const LabelFont& font = LabelFont::shared();
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    const BinaryMask& m = out.masks[k];
    if (m.width != w || m.height != h) continue;
    const auto [x0, y0, x1, y1] = visible_box(m);
    if (x1 < x0) continue;  // not visible on this frame
    auto c = id_color(out.obj_ids[k]);
    const int bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    fill_rect(img, x0, y0, bw, line, c);
    fill_rect(img, x0, y1 - line + 1, bw, line, c);
    fill_rect(img, x0, y0, line, bh, c);
    fill_rect(img, x1 - line + 1, y0, line, bh, c);
    font.draw_label(img, x0, y0, std::to_string(out.obj_ids[k]), text_px, text_color(c), c);
  }
  return img;
}

TrackWriter::TrackWriter(const std::string& out_dir, int width, int height, const OutputOptions& opt)
    : dir_(out_dir), width_(width), height_(height), opt_(opt) {
  SEGMUX_CHECK(opt_.formats.empty() || opt_.write_json,
               "evaluation and annotation formats are made from tracks.json, which this run does not write");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  SEGMUX_CHECK(!ec && fs::is_directory(dir_), "cannot create output folder '", dir_, "': ", ec.message());
  for (const char* sub : {"masks", "masks_color"}) {
    if (sub == std::string("masks") ? !opt_.write_masks : !opt_.color_masks) continue;
    fs::create_directories(dir_ + "/" + sub, ec);
    SEGMUX_CHECK(!ec, "cannot create '", dir_, "/", sub, "': ", ec.message());
  }
  if (opt_.write_json) {
    json_ = std::make_unique<AtomicFile>(dir_ + "/tracks.json");
    nlohmann::json head = {{"format", "segmux-tracks-2"},
                           {"source", opt_.source},
                           {"prompt", opt_.prompt},
                           {"width", width},
                           {"height", height},
                           {"rle", rle_form_description(opt_.rle)},
                           {"box_format", "xywh normalised to [0,1], 5 decimals"},
                           {"time", "time_s: presentation time in seconds (null when the input has none)"}};
    if (opt_.prompts.size() > 1) head["prompts"] = opt_.prompts;
    std::string h = utf8_json(head);
    h.pop_back();  // reopen the object to append "frames"
    json_->write(h + ",\"frames\":[\n");
  }
  if (!opt_.overlay_path.empty()) overlay_ = open_video_writer(opt_.overlay_path, width, height, opt_.fps);
}

TrackWriter::~TrackWriter() = default;

void TrackWriter::add(const RgbImage& frame, const FrameOutput& out, std::optional<double> time_s) {
  SEGMUX_CHECK(out.masks.size() == out.obj_ids.size() && out.probs.size() == out.obj_ids.size() &&
                   out.boxes_xywh.size() == out.obj_ids.size(),
               "frame ", out.frame_index, " output has inconsistent object lists");
  for (const auto& m : out.masks)
    SEGMUX_CHECK(m.width == width_ && m.height == height_, "frame ", out.frame_index, " mask is ", m.width, "x",
                 m.height, ", the video is ", width_, "x", height_);
  if (opt_.write_masks || opt_.color_masks) {
    std::vector<uint16_t> ids(size_t(width_) * size_t(height_), 0);
    for (size_t k = 0; k < out.obj_ids.size(); ++k) {
      int64_t id = out.obj_ids[k];
      SEGMUX_CHECK(id >= 0 && id < 65535, "object id ", id, " does not fit a 16-bit mask PNG");
      for (size_t i = 0; i < out.masks[k].pixels.size(); ++i)
        if (out.masks[k].pixels[i]) ids[i] = uint16_t(id + 1);
    }
    char name[64];
    std::snprintf(name, sizeof name, "%05d.png", out.frame_index);
    if (opt_.write_masks) write_png_gray(dir_ + "/masks/" + name, width_, height_, ids, true);
    if (opt_.color_masks) write_color_mask(dir_ + "/masks_color/" + name, width_, height_, ids, out.obj_ids);
  }
  if (json_) json_->write((frames_ ? ",\n" : "") + utf8_json(frame_json(out, opt_.rle, time_s, opt_.prompt)));
  if (overlay_) overlay_->add(draw_overlay(frame, out));
  ++frames_;
}

void TrackWriter::finish() {
  if (json_) {
    json_->write("\n]}\n");
    json_->commit();
    json_.reset();
    if (!opt_.formats.empty())
      write_exports(dir_, read_eval_json(dir_ + "/tracks.json"), opt_.formats, opt_.export_context);
  }
  if (overlay_) overlay_->finish();
  overlay_.reset();
}

}  // namespace segmux::pipeline
