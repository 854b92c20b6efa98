#include "pipeline/media/gif_palette.h"

extern "C" {
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
}
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

std::string av_text(int code) {
  char buf[256];
  av_strerror(code, buf, sizeof buf);
  return buf;
}

void check_av(int rc, const char* what) { SEGMUX_CHECK(rc >= 0, "GIF palette: ", what, ": ", av_text(rc)); }

AVFilterContext* add_filter(AVFilterGraph* g, const char* filter, const char* name, const std::string& args) {
  const AVFilter* f = avfilter_get_by_name(filter);
  SEGMUX_CHECK(f != nullptr, "GIF palette: this libavfilter has no '", filter, "' filter");
  AVFilterContext* ctx = nullptr;
  check_av(avfilter_graph_create_filter(&ctx, f, name, args.empty() ? nullptr : args.c_str(), nullptr, g), filter);
  return ctx;
}

std::string source_args(int width, int height, AVPixelFormat fmt) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "video_size=%dx%d:pix_fmt=%d:time_base=1/100:pixel_aspect=1/1", width, height,
                int(fmt));
  return buf;
}

}  // namespace

GifPalette::GifPalette(int width, int height) : width_(width), height_(height) {
  av_log_set_level(AV_LOG_ERROR);  // palettegen reports its colour counts otherwise
  out_ = av_frame_alloc();
  graph_ = avfilter_graph_alloc();
  SEGMUX_CHECK(out_ && graph_, "GIF palette: out of memory");
  graph_->nb_threads = 1;
  src_ = add_filter(graph_, "buffer", "in", source_args(width, height, AV_PIX_FMT_RGB24));
  // Every pixel counts (stats_mode=full); all 256 entries for colours (no transparent slot).
  AVFilterContext* gen =
      add_filter(graph_, "palettegen", "gen", "max_colors=256:reserve_transparent=0:stats_mode=full");
  sink_ = add_filter(graph_, "buffersink", "out", "");
  check_av(avfilter_link(src_, 0, gen, 0), "link");
  check_av(avfilter_link(gen, 0, sink_, 0), "link");
  check_av(avfilter_graph_config(graph_, nullptr), "palettegen graph");
}

GifPalette::~GifPalette() {
  avfilter_graph_free(&graph_);
  av_frame_free(&palette_);
  av_frame_free(&out_);
}

void GifPalette::push(AVFilterContext* src, const RgbImage* img) {
  if (!img) return check_av(av_buffersrc_add_frame(src, nullptr), "end of frames");
  SEGMUX_CHECK(img->width == width_ && img->height == height_, "GIF palette: frame of ", img->width, "x", img->height,
               ", expected ", width_, "x", height_);
  AVFrame* f = av_frame_alloc();
  SEGMUX_CHECK(f != nullptr, "GIF palette: out of memory");
  f->format = AV_PIX_FMT_RGB24;
  f->width = width_;
  f->height = height_;
  f->pts = pts_++;
  int rc = av_frame_get_buffer(f, 0);
  if (rc >= 0) {
    for (int y = 0; y < height_; ++y)
      std::memcpy(f->data[0] + size_t(y) * size_t(f->linesize[0]), pixel_at(*img, 0, y), size_t(width_) * 3);
    rc = av_buffersrc_add_frame(src, f);  // takes the frame's data
  }
  av_frame_free(&f);
  check_av(rc, "feeding a frame");
}

void GifPalette::add_for_palette(const RgbImage& frame) {
  SEGMUX_CHECK(palette_ == nullptr, "GIF palette: a frame for the palette after mapping began");
  push(src_, &frame);
}

void GifPalette::start_mapping() {
  push(src_, nullptr);
  palette_ = av_frame_alloc();
  SEGMUX_CHECK(palette_ != nullptr, "GIF palette: out of memory");
  check_av(av_buffersink_get_frame(sink_, palette_), "palettegen gave no palette (no frames?)");
  avfilter_graph_free(&graph_);
  // Pass 2: frames and the palette into paletteuse, which keeps the one palette for every frame.
  graph_ = avfilter_graph_alloc();
  SEGMUX_CHECK(graph_ != nullptr, "GIF palette: out of memory");
  graph_->nb_threads = 1;
  pts_ = 0;
  src_ = add_filter(graph_, "buffer", "in", source_args(width_, height_, AV_PIX_FMT_RGB24));
  pal_src_ = add_filter(graph_, "buffer", "palette",
                        source_args(palette_->width, palette_->height, AVPixelFormat(palette_->format)));
  AVFilterContext* use = add_filter(graph_, "paletteuse", "use", "dither=sierra2_4a:new=0");
  sink_ = add_filter(graph_, "buffersink", "out", "");
  check_av(avfilter_link(src_, 0, use, 0), "link");
  check_av(avfilter_link(pal_src_, 0, use, 1), "link");
  check_av(avfilter_link(use, 0, sink_, 0), "link");
  check_av(avfilter_graph_config(graph_, nullptr), "paletteuse graph");
  palette_->pts = 0;
  check_av(av_buffersrc_add_frame_flags(pal_src_, palette_, AV_BUFFERSRC_FLAG_KEEP_REF), "palette");
  check_av(av_buffersrc_add_frame(pal_src_, nullptr), "palette end");
}

std::vector<PalettedFrame> GifPalette::drain() {
  std::vector<PalettedFrame> frames;
  while (true) {
    int rc = av_buffersink_get_frame(sink_, out_);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) break;
    check_av(rc, "paletteuse");
    SEGMUX_CHECK(out_->format == AV_PIX_FMT_PAL8 && out_->width == width_ && out_->height == height_,
                 "GIF palette: paletteuse gave an unexpected frame");
    PalettedFrame p;
    p.indices.resize(size_t(width_) * size_t(height_));
    for (int y = 0; y < height_; ++y)
      std::memcpy(&p.indices[size_t(y) * size_t(width_)], out_->data[0] + size_t(y) * size_t(out_->linesize[0]),
                  size_t(width_));
    const auto* pal = reinterpret_cast<const uint32_t*>(out_->data[1]);  // native-endian 0xAARRGGBB
    for (int i = 0; i < 256; ++i) p.palette.push_back({uint8_t(pal[i] >> 16), uint8_t(pal[i] >> 8), uint8_t(pal[i])});
    frames.push_back(std::move(p));
    av_frame_unref(out_);
  }
  return frames;
}

std::vector<PalettedFrame> GifPalette::map(const RgbImage& frame) {
  if (!palette_) start_mapping();
  push(src_, &frame);
  return drain();
}

std::vector<PalettedFrame> GifPalette::finish_mapping() {
  if (!palette_) start_mapping();
  push(src_, nullptr);
  return drain();
}

}  // namespace segmux::pipeline
