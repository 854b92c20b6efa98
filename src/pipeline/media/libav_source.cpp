#include "pipeline/media/libav_source.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace segmux::pipeline::media_detail {

std::string av_error(int code) {
  char buf[256];
  av_strerror(code, buf, sizeof buf);
  return buf;
}

// Converts a decoded AVFrame of any pixel format into RGB u8.
RgbImage to_rgb(const AVFrame* f, SwsContext** sws, const std::string& path) {
  check_frame_size(f->width, f->height, "a frame of '" + path + "'");
  RgbImage img;
  img.width = f->width;
  img.height = f->height;
  img.pixels.resize(size_t(f->width) * size_t(f->height) * 3);
  // Exact conversion for already-RGB sources; swscale for everything else.
  *sws =
      sws_getCachedContext(*sws, f->width, f->height, AVPixelFormat(f->format), f->width, f->height, AV_PIX_FMT_RGB24,
                           SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr, nullptr);
  SEGMUX_CHECK(*sws != nullptr, "cannot convert pixel format ", av_get_pix_fmt_name(AVPixelFormat(f->format)));
  uint8_t* dst[4] = {img.pixels.data(), nullptr, nullptr, nullptr};
  int dst_stride[4] = {f->width * 3, 0, 0, 0};
  sws_scale(*sws, f->data, f->linesize, 0, f->height, dst, dst_stride);
  return img;
}

}  // namespace segmux::pipeline::media_detail
