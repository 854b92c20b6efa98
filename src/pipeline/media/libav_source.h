// One open media input with a video decoder (libavformat + libavcodec), shared by the file readers
// (video_io_libav.cpp) and live streams (live_stream.h): a file, a URL, a pipe or a capture device.
#pragma once
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "pipeline/media/media_detail.h"
#include "pipeline/media/rotation.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline::media_detail {

std::string av_error(int code);  // libav's text for an error code
// Converts a decoded AVFrame of any pixel format into RGB u8.
RgbImage to_rgb(const AVFrame* f, SwsContext** sws, const std::string& path);

// How to open an input that is not a plain file: the demuxer (a capture device's, rawvideo), its
// options (sizes, timeouts) and a callback libav polls during blocking reads (to stop a stalled stream).
struct AvInput {
  const AVInputFormat* format = nullptr;  // nullptr: probed
  std::vector<std::pair<std::string, std::string>> options;
  AVIOInterruptCB interrupt{nullptr, nullptr};
};

// One open media file with a decoder. Used for videos and for single images.
class AvSource {
 public:
  explicit AvSource(const std::string& path, const AvInput& input = {}) : path_(path), input_(input) {
    // A throw leaves the constructor without running the destructor: release what was opened (a
    // decoder context keeps its threads; leaked per bad file they exhausted a server or a fuzzer).
    try {
      open();
    } catch (...) {
      release();
      throw;
    }
  }
  ~AvSource() { release(); }
  AvSource(const AvSource&) = delete;
  AvSource& operator=(const AvSource&) = delete;

 private:
  void release() {
    av_frame_free(&frame_);
    av_packet_free(&pkt_);
    avcodec_free_context(&dec_);
    avformat_close_input(&fmt_);
    sws_freeContext(sws_);
    sws_ = nullptr;
  }
  void open() {
    const std::string& path = path_;
    av_log_set_level(AV_LOG_ERROR);
    fmt_ = avformat_alloc_context();
    SEGMUX_CHECK(fmt_ != nullptr, "out of memory");
    fmt_->interrupt_callback = input_.interrupt;
    AVDictionary* options = nullptr;
    for (const auto& [key, value] : input_.options) av_dict_set(&options, key.c_str(), value.c_str(), 0);
    int rc = avformat_open_input(&fmt_, path.c_str(), input_.format, &options);  // frees fmt_ on failure
    av_dict_free(&options);
    SEGMUX_CHECK(rc >= 0, "cannot open '", path, "': ", av_error(rc));
    rc = avformat_find_stream_info(fmt_, nullptr);
    SEGMUX_CHECK(rc >= 0, "'", path, "': cannot read stream info: ", av_error(rc));
    stream_ = av_find_best_stream(fmt_, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    SEGMUX_CHECK(stream_ >= 0, "'", path, "' has no video stream");
    const AVCodecParameters* par = fmt_->streams[stream_]->codecpar;
    const AVCodec* codec = avcodec_find_decoder(par->codec_id);
    SEGMUX_CHECK(codec != nullptr, "'", path, "': no decoder for codec ", avcodec_get_name(par->codec_id));
    dec_ = avcodec_alloc_context3(codec);
    SEGMUX_CHECK(dec_ != nullptr, "out of memory");
    avcodec_parameters_to_context(dec_, par);
    dec_->thread_count = 2;
    rc = avcodec_open2(dec_, codec, nullptr);
    SEGMUX_CHECK(rc >= 0, "'", path, "': cannot open decoder: ", av_error(rc));
    check_frame_size(par->width, par->height, "'" + path + "'");
    const AVStream* st = fmt_->streams[stream_];
    const AVDictionaryEntry* tag = av_dict_get(st->metadata, "rotate", nullptr, 0);
    size_t matrix_size = 0;
    const uint8_t* matrix = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &matrix_size);
    rotation_ = upright_rotation(
        matrix && matrix_size >= 9 * sizeof(int32_t) ? reinterpret_cast<const int32_t*>(matrix) : nullptr,
        tag ? tag->value : nullptr);
    const bool quarter = rotation_ == 90 || rotation_ == 270;
    width_ = quarter ? par->height : par->width;  // upright
    height_ = quarter ? par->width : par->height;
    time_base_ = fmt_->streams[stream_]->time_base;
    AVRational r = fmt_->streams[stream_]->avg_frame_rate;
    fps_ = (r.num > 0 && r.den > 0) ? av_q2d(r) : 25.0;
    codec_name_ = codec->name;
    pkt_ = av_packet_alloc();
    frame_ = av_frame_alloc();
    SEGMUX_CHECK(pkt_ && frame_, "out of memory");
  }

 public:
  // Scans packets once (no decoding) to list every frame's presentation time in display order.
  std::vector<int64_t> index_frames() {
    std::vector<int64_t> pts;
    while (av_read_frame(fmt_, pkt_) >= 0) {
      // Packets flagged DISCARD lie outside the container's edit list: decoders drop them too.
      if (pkt_->stream_index == stream_ && !(pkt_->flags & AV_PKT_FLAG_DISCARD))
        pts.push_back(pkt_->pts != AV_NOPTS_VALUE ? pkt_->pts : pkt_->dts);
      av_packet_unref(pkt_);
    }
    std::sort(pts.begin(), pts.end());
    rewind();
    return pts;
  }

  void rewind() { seek_to(INT64_MIN); }

  void seek_to(int64_t pts) {
    int rc = avformat_seek_file(fmt_, stream_, INT64_MIN, pts == INT64_MIN ? 0 : pts, pts == INT64_MIN ? 0 : pts,
                                AVSEEK_FLAG_BACKWARD);
    if (rc < 0) rc = av_seek_frame(fmt_, stream_, 0, AVSEEK_FLAG_BACKWARD);
    avcodec_flush_buffers(dec_);
    if (packet_pending_) av_packet_unref(pkt_);
    packet_pending_ = false;
    eof_ = false;
  }

  // Next decoded frame in decode order; false at end of stream.
  bool next(RgbImage* out, int64_t* pts) {
    while (true) {
      int rc = avcodec_receive_frame(dec_, frame_);
      if (rc == 0) {
        *pts = frame_->best_effort_timestamp != AV_NOPTS_VALUE ? frame_->best_effort_timestamp : frame_->pts;
        *out = rotate_clockwise(to_rgb(frame_, &sws_, path_), rotation_);
        av_frame_unref(frame_);
        return true;
      }
      if (rc == AVERROR_EOF) return false;
      SEGMUX_CHECK(rc == AVERROR(EAGAIN), "'", path_, "': decoding failed: ", av_error(rc));
      if (eof_) return false;
      if (!packet_pending_) {
        rc = av_read_frame(fmt_, pkt_);
        if (rc < 0) {
          eof_ = true;
          avcodec_send_packet(dec_, nullptr);  // drain the decoder
          continue;
        }
        if (pkt_->stream_index != stream_) {
          av_packet_unref(pkt_);
          continue;
        }
      }
      int s = avcodec_send_packet(dec_, pkt_);
      // EAGAIN: the decoder is full; keep the packet and collect frames first.
      packet_pending_ = s == AVERROR(EAGAIN);
      if (!packet_pending_) av_packet_unref(pkt_);
      SEGMUX_CHECK(s >= 0 || s == AVERROR(EAGAIN), "'", path_, "': corrupt packet: ", av_error(s));
    }
  }

  int width() const { return width_; }
  int height() const { return height_; }
  double fps() const { return fps_; }
  AVRational time_base() const { return time_base_; }
  int rotation() const { return rotation_; }  // clockwise degrees applied to decoded frames
  const std::string& codec_name() const { return codec_name_; }

 private:
  std::string path_;
  AvInput input_;
  AVFormatContext* fmt_ = nullptr;
  AVCodecContext* dec_ = nullptr;
  AVPacket* pkt_ = nullptr;
  AVFrame* frame_ = nullptr;
  SwsContext* sws_ = nullptr;
  int stream_ = -1;
  int width_ = 0, height_ = 0;
  double fps_ = 25;
  AVRational time_base_{1, 1};
  int rotation_ = 0;
  bool eof_ = false;
  bool packet_pending_ = false;
  std::string codec_name_;
};

}  // namespace segmux::pipeline::media_detail
