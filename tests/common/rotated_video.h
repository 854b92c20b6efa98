// Writes an MP4 whose stream carries rotation metadata, as phones record: frames stored sideways plus
// a display matrix saying how to turn them upright. Test helper (libav directly, MPEG-4 Part 2, which
// every libavcodec has).
#pragma once
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libswscale/swscale.h>
}
#include <cstring>
#include <string>
#include <vector>

#include "pipeline/media/video_io.h"

namespace segmux::testing {

// `stored` frames are written as they are; `clockwise` (0/90/180/270) is the turn a player applies to
// show them upright (av_display_rotation_set takes the clockwise angle; av_display_rotation_get gives
// back the counterclockwise one, -clockwise, as phones' files read: "rotation of -90.00 degrees"). With
// `as_tag`, the old "rotate" metadata tag is written instead of the matrix. Returns "" or an error.
inline std::string write_rotated_mp4(const std::string& path, const std::vector<pipeline::RgbImage>& stored,
                                     int clockwise, bool as_tag = false, int fps = 10) {
  const int w = stored.at(0).width, h = stored.at(0).height;
  AVFormatContext* fmt = nullptr;
  if (avformat_alloc_output_context2(&fmt, nullptr, "mp4", path.c_str()) < 0) return "no mp4 muxer";
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  AVStream* st = avformat_new_stream(fmt, nullptr);
  AVCodecContext* enc = avcodec_alloc_context3(codec);
  enc->width = w;
  enc->height = h;
  enc->pix_fmt = AV_PIX_FMT_YUV420P;
  enc->time_base = AVRational{1, fps};
  enc->framerate = AVRational{fps, 1};
  enc->gop_size = 4;
  enc->bit_rate = int64_t(w) * h * 20;
  if (fmt->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  std::string err;
  if (avcodec_open2(enc, codec, nullptr) < 0) err = "cannot open the MPEG-4 encoder";
  if (err.empty()) {
    avcodec_parameters_from_context(st->codecpar, enc);
    st->time_base = enc->time_base;
    if (as_tag) {
      av_dict_set(&st->metadata, "rotate", std::to_string(clockwise).c_str(), 0);
    } else if (clockwise) {
      auto* m = reinterpret_cast<int32_t*>(av_stream_new_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(int32_t)));
      av_display_rotation_set(m, double(clockwise));
    }
    if (avio_open(&fmt->pb, path.c_str(), AVIO_FLAG_WRITE) < 0 || avformat_write_header(fmt, nullptr) < 0)
      err = "cannot write " + path;
  }
  AVFrame* frame = av_frame_alloc();
  AVPacket* pkt = av_packet_alloc();
  SwsContext* sws =
      sws_getContext(w, h, AV_PIX_FMT_RGB24, w, h, AV_PIX_FMT_YUV420P, SWS_BICUBIC, nullptr, nullptr, nullptr);
  frame->format = AV_PIX_FMT_YUV420P;
  frame->width = w;
  frame->height = h;
  av_frame_get_buffer(frame, 0);
  auto encode = [&](AVFrame* f) {
    avcodec_send_frame(enc, f);
    while (avcodec_receive_packet(enc, pkt) == 0) {
      if (pkt->duration == 0) pkt->duration = 1;
      av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
      pkt->stream_index = st->index;
      av_interleaved_write_frame(fmt, pkt);
    }
  };
  for (size_t i = 0; err.empty() && i < stored.size(); ++i) {
    av_frame_make_writable(frame);
    const uint8_t* src[4] = {stored[i].pixels.data(), nullptr, nullptr, nullptr};
    int stride[4] = {w * 3, 0, 0, 0};
    sws_scale(sws, src, stride, 0, h, frame->data, frame->linesize);
    frame->pts = int64_t(i);
    encode(frame);
  }
  if (err.empty()) {
    encode(nullptr);
    if (av_write_trailer(fmt) < 0) err = "cannot finish " + path;
  }
  if (fmt->pb) avio_closep(&fmt->pb);
  sws_freeContext(sws);
  av_packet_free(&pkt);
  av_frame_free(&frame);
  avcodec_free_context(&enc);
  avformat_free_context(fmt);
  return err;
}

}  // namespace segmux::testing
