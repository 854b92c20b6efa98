#include "pipeline/outputs/outputs.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"

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

// 3x5 pixel digits, one row per 3-bit pattern (bit 2 = left column).
constexpr uint8_t kDigits[10][5] = {{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
                                    {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
                                    {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

void fill_rect(RgbImage& img, int x0, int y0, int w, int h, std::array<uint8_t, 3> c) {
  for (int y = std::max(0, y0); y < std::min(img.height, y0 + h); ++y)
    for (int x = std::max(0, x0); x < std::min(img.width, x0 + w); ++x) std::memcpy(pixel_at(img, x, y), c.data(), 3);
}

void draw_label(RgbImage& img, int x, int y, int64_t id, std::array<uint8_t, 3> bg, int scale) {
  std::string text = std::to_string(id);
  int w = int(text.size()) * 4 * scale + scale, h = 7 * scale;
  x = std::clamp(x, 0, std::max(0, img.width - w));
  y = std::clamp(y, 0, std::max(0, img.height - h));
  fill_rect(img, x, y, w, h, bg);
  for (size_t k = 0; k < text.size(); ++k) {
    const uint8_t* glyph = kDigits[text[k] - '0'];
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 3; ++c)
        if (glyph[r] & (4 >> c))
          fill_rect(img, x + scale + int(k) * 4 * scale + c * scale, y + scale + r * scale, scale, scale,
                    {255, 255, 255});
  }
}

}  // namespace

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
  const int scale = std::max(1, std::min(w, h) / 160);
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    const auto& b = out.boxes_xywh[k];
    if (out.masks[k].area() == 0 || b[2] <= 0 || b[3] <= 0) continue;
    auto c = id_color(out.obj_ids[k]);
    int x0 = int(std::lround(b[0] * float(w))), y0 = int(std::lround(b[1] * float(h)));
    int bw = int(std::lround(b[2] * float(w))) + 1, bh = int(std::lround(b[3] * float(h))) + 1;
    fill_rect(img, x0, y0, bw, scale, c);
    fill_rect(img, x0, y0 + bh - scale, bw, scale, c);
    fill_rect(img, x0, y0, scale, bh, c);
    fill_rect(img, x0 + bw - scale, y0, scale, bh, c);
    draw_label(img, x0, y0 - 7 * scale, out.obj_ids[k], c, scale);
  }
  return img;
}

TrackWriter::TrackWriter(const std::string& out_dir, int width, int height, const OutputOptions& opt)
    : dir_(out_dir), width_(width), height_(height), opt_(opt) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  SEGMUX_CHECK(!ec && fs::is_directory(dir_), "cannot create output folder '", dir_, "': ", ec.message());
  if (opt_.write_masks) {
    fs::create_directories(dir_ + "/masks", ec);
    SEGMUX_CHECK(!ec, "cannot create '", dir_, "/masks': ", ec.message());
  }
  if (opt_.write_json) {
    json_tmp_ = dir_ + "/tracks.json.tmp." + std::to_string(::getpid());
    json_ = std::fopen(json_tmp_.c_str(), "wb");
    SEGMUX_CHECK(json_ != nullptr, "cannot write '", json_tmp_, "': ", std::strerror(errno));
    nlohmann::json head = {{"format", "segmux-tracks-1"},
                           {"source", opt_.source},
                           {"prompt", opt_.prompt},
                           {"width", width},
                           {"height", height},
                           {"rle", "COCO uncompressed RLE: column-major, counts start with a run of 0s"},
                           {"box_format", "xywh normalised to [0,1]"}};
    if (opt_.prompts.size() > 1) head["prompts"] = opt_.prompts;
    std::string h = head.dump();
    h.pop_back();  // reopen the object to append "frames"
    std::fprintf(json_, "%s,\"frames\":[\n", h.c_str());
  }
  if (!opt_.overlay_path.empty()) overlay_ = open_video_writer(opt_.overlay_path, width, height, opt_.fps);
}

TrackWriter::~TrackWriter() {
  if (json_) {
    std::fclose(json_);
    std::remove(json_tmp_.c_str());
  }
}

void TrackWriter::add(const RgbImage& frame, const FrameOutput& out) {
  SEGMUX_CHECK(out.masks.size() == out.obj_ids.size() && out.probs.size() == out.obj_ids.size() &&
                   out.boxes_xywh.size() == out.obj_ids.size(),
               "frame ", out.frame_index, " output has inconsistent object lists");
  for (const auto& m : out.masks)
    SEGMUX_CHECK(m.width == width_ && m.height == height_, "frame ", out.frame_index, " mask is ", m.width, "x",
                 m.height, ", the video is ", width_, "x", height_);
  if (opt_.write_masks) {
    std::vector<uint16_t> ids(size_t(width_) * size_t(height_), 0);
    for (size_t k = 0; k < out.obj_ids.size(); ++k) {
      int64_t id = out.obj_ids[k];
      SEGMUX_CHECK(id >= 0 && id < 65535, "object id ", id, " does not fit a 16-bit mask PNG");
      for (size_t i = 0; i < out.masks[k].pixels.size(); ++i)
        if (out.masks[k].pixels[i]) ids[i] = uint16_t(id + 1);
    }
    char name[64];
    std::snprintf(name, sizeof name, "/masks/%05d.png", out.frame_index);
    write_png_gray(dir_ + name, width_, height_, ids, true);
  }
  if (json_) {
    nlohmann::json objs = nlohmann::json::array();
    for (size_t k = 0; k < out.obj_ids.size(); ++k) {
      RleMask rle = rle_encode(out.masks[k]);
      nlohmann::json prompt = k < out.prompts.size() ? out.prompts[k] : opt_.prompt;
      objs.push_back({{"id", out.obj_ids[k]},
                      {"prompt", std::move(prompt)},
                      {"score", out.probs[k]},
                      {"box_xywh", out.boxes_xywh[k]},
                      {"area", rle_area(rle)},
                      {"mask_rle", {{"size", {rle.height, rle.width}}, {"counts", rle.counts}}}});
    }
    nlohmann::json f = {{"frame_index", out.frame_index},
                        {"objects", objs},
                        {"num_obj_tracked", out.stats.num_obj_tracked},
                        {"num_obj_dropped", out.stats.num_obj_dropped}};
    std::fprintf(json_, "%s%s", frames_ ? ",\n" : "", f.dump().c_str());
  }
  if (overlay_) overlay_->add(draw_overlay(frame, out));
  ++frames_;
}

void TrackWriter::finish() {
  if (json_) {
    std::fprintf(json_, "\n]}\n");
    bool ok = std::fflush(json_) == 0;
    ok = std::fclose(json_) == 0 && ok;
    json_ = nullptr;
    if (!ok || std::rename(json_tmp_.c_str(), (dir_ + "/tracks.json").c_str()) != 0) {
      std::remove(json_tmp_.c_str());
      fail("cannot write '", dir_, "/tracks.json'");
    }
  }
  if (overlay_) overlay_->finish();
  overlay_.reset();
}

}  // namespace segmux::pipeline
