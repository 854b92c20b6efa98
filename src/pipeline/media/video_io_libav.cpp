// Videos and single images through libav (libavformat / libavcodec / libswscale), and video files
// written through it.
extern "C" {
#include <libavutil/imgutils.h>
}
#include <cstdio>
#include <deque>
#include <optional>

#include "io/files.h"
#include "io/paths.h"
#include "pipeline/media/libav_source.h"

namespace segmux::pipeline {

namespace media_detail {

namespace {

// Keeps the last few decoded frames: the predictor revisits recent frames, never far back at once.
class FrameWindow {
 public:
  explicit FrameWindow(size_t capacity) : capacity_(capacity) {}
  const RgbImage* find(int i) const {
    for (auto& [idx, img] : items_)
      if (idx == i) return &img;
    return nullptr;
  }
  void put(int i, RgbImage img) {
    if (find(i)) return;
    items_.emplace_back(i, std::move(img));
    while (items_.size() > capacity_) items_.pop_front();
  }

 private:
  size_t capacity_;
  std::deque<std::pair<int, RgbImage>> items_;
};

class LibavVideoReader : public VideoReader {
 public:
  explicit LibavVideoReader(const std::string& path) : path_(path), src_(path), window_(4) {
    pts_ = src_.index_frames();
    SEGMUX_CHECK(!pts_.empty(), "'", path, "' contains no video frames");
  }
  int num_frames() const override { return int(pts_.size()); }
  int width() const override { return src_.width(); }
  int height() const override { return src_.height(); }
  double fps() const override { return src_.fps(); }
  std::optional<double> time_s(int index) const override {
    const int64_t pts = pts_.at(size_t(index));
    const AVRational tb = src_.time_base();
    if (pts == AV_NOPTS_VALUE || tb.num <= 0 || tb.den <= 0) return std::nullopt;
    return double(pts) * tb.num / tb.den;
  }
  std::string describe() const override {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s: %d frames %dx%d @ %.3g fps (%s%s)", path_.c_str(), num_frames(), width(),
                  height(), fps(), src_.codec_name().c_str(),
                  src_.rotation() ? (", turned " + std::to_string(src_.rotation()) +
                                     " degrees clockwise as its "
                                     "rotation metadata says")
                                        .c_str()
                                  : "");
    return buf;
  }
  RgbImage frame(int index) override {
    SEGMUX_CHECK(index >= 0 && index < num_frames(), "frame ", index, " is outside the video (", num_frames(),
                 " frames)");
    if (const RgbImage* hit = window_.find(index)) return *hit;
    if (index != next_index_) {
      src_.seek_to(pts_[size_t(index)]);
      next_index_ = -1;  // position unknown until we see a timestamp
    }
    RgbImage img;
    int64_t pts = 0;
    while (src_.next(&img, &pts)) {
      int i = int(std::lower_bound(pts_.begin(), pts_.end(), pts) - pts_.begin());
      if (i >= num_frames() || pts_[size_t(i)] != pts) continue;  // frame outside the index (rare)
      next_index_ = i + 1;
      window_.put(i, img);
      if (i == index) return img;
      if (i > index) break;
    }
    fail("'", path_, "': could not decode frame ", index);
  }

 private:
  std::string path_;
  AvSource src_;
  FrameWindow window_;
  std::vector<int64_t> pts_;
  int next_index_ = 0;
};

class AvWriter : public VideoWriter {
 public:
  AvWriter(const std::string& path, int width, int height, double fps)
      : path_(path), tmp_(temp_path_for(path)), width_(width), height_(height) {
    // A constructor that throws runs no destructor: free what was made and leave no temporary file.
    try {
      open(path, width, height, fps);
    } catch (...) {
      release();
      throw;
    }
  }
  ~AvWriter() override { release(); }
  void add(const RgbImage& f) override {
    SEGMUX_CHECK(f.width == width_ && f.height == height_, "video frame size ", f.width, "x", f.height,
                 " differs from ", width_, "x", height_);
    av_frame_make_writable(frame_);
    const uint8_t* src[4] = {f.pixels.data(), nullptr, nullptr, nullptr};
    int stride[4] = {width_ * 3, 0, 0, 0};
    sws_scale(sws_, src, stride, 0, height_, frame_->data, frame_->linesize);
    frame_->pts = next_pts_++;
    encode(frame_);
  }
  void finish() override {
    encode(nullptr);
    int rc = av_write_trailer(fmt_);
    SEGMUX_CHECK(rc >= 0, "cannot finish '", path_, "': ", av_error(rc));
    avio_closep(&fmt_->pb);
    commit_temp(tmp_, path_);
    finished_ = true;
  }

 private:
  void open(const std::string& path, int width, int height, double fps) {
    av_log_set_level(AV_LOG_ERROR);  // encoders (libx264) otherwise print statistics on stderr
    const AVOutputFormat* ofmt = av_guess_format(nullptr, path.c_str(), nullptr);
    SEGMUX_CHECK(ofmt != nullptr, "'", path, "': unknown video container (use .mp4, .mov, .mkv or .gif)");
    int rc = avformat_alloc_output_context2(&fmt_, ofmt, nullptr, tmp_.c_str());
    SEGMUX_CHECK(rc >= 0, "cannot create '", path, "': ", av_error(rc));
    const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
    if (!codec) codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    SEGMUX_CHECK(codec != nullptr, "no H.264 or MPEG-4 video encoder in this libavcodec");
    stream_ = avformat_new_stream(fmt_, nullptr);
    enc_ = avcodec_alloc_context3(codec);
    // yuv420p needs even sizes: pad by one pixel (the last row/column is repeated by swscale).
    enc_->width = (width + 1) & ~1;
    enc_->height = (height + 1) & ~1;
    enc_->pix_fmt = AV_PIX_FMT_YUV420P;
    int fps_num = int(std::lround(std::max(1.0, fps) * 1000));
    enc_->time_base = AVRational{1000, fps_num};
    enc_->framerate = AVRational{fps_num, 1000};
    enc_->gop_size = 12;
    enc_->bit_rate = int64_t(width) * height * 4;
    if (fmt_->oformat->flags & AVFMT_GLOBALHEADER) enc_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    rc = avcodec_open2(enc_, codec, nullptr);
    SEGMUX_CHECK(rc >= 0, "cannot open video encoder ", codec->name, ": ", av_error(rc));
    avcodec_parameters_from_context(stream_->codecpar, enc_);
    stream_->time_base = enc_->time_base;
    rc = avio_open(&fmt_->pb, tmp_.c_str(), AVIO_FLAG_WRITE);
    SEGMUX_CHECK(rc >= 0, "cannot write '", tmp_, "': ", av_error(rc));
    rc = avformat_write_header(fmt_, nullptr);
    SEGMUX_CHECK(rc >= 0, "cannot write '", path, "': ", av_error(rc));
    frame_ = av_frame_alloc();
    frame_->format = enc_->pix_fmt;
    frame_->width = enc_->width;
    frame_->height = enc_->height;
    av_frame_get_buffer(frame_, 0);
    pkt_ = av_packet_alloc();
    sws_ = sws_getContext(width, height, AV_PIX_FMT_RGB24, enc_->width, enc_->height, AV_PIX_FMT_YUV420P, SWS_BICUBIC,
                          nullptr, nullptr, nullptr);
  }
  void release() {
    if (fmt_ && fmt_->pb) avio_closep(&fmt_->pb);
    if (!finished_) std::remove(tmp_.c_str());
    sws_freeContext(sws_);
    av_packet_free(&pkt_);
    av_frame_free(&frame_);
    avcodec_free_context(&enc_);
    avformat_free_context(fmt_);
  }
  void encode(AVFrame* f) {
    int rc = avcodec_send_frame(enc_, f);
    SEGMUX_CHECK(rc >= 0, "video encoding failed: ", av_error(rc));
    while ((rc = avcodec_receive_packet(enc_, pkt_)) == 0) {
      if (pkt_->duration == 0) pkt_->duration = 1;  // one frame; else the MP4 edit list drops the last frame
      av_packet_rescale_ts(pkt_, enc_->time_base, stream_->time_base);
      pkt_->stream_index = stream_->index;
      int w = av_interleaved_write_frame(fmt_, pkt_);
      SEGMUX_CHECK(w >= 0, "cannot write '", path_, "': ", av_error(w));
    }
    SEGMUX_CHECK(rc == AVERROR(EAGAIN) || rc == AVERROR_EOF, "video encoding failed: ", av_error(rc));
  }
  std::string path_, tmp_;
  int width_, height_;
  AVFormatContext* fmt_ = nullptr;
  AVCodecContext* enc_ = nullptr;
  AVStream* stream_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* pkt_ = nullptr;
  SwsContext* sws_ = nullptr;
  int64_t next_pts_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<VideoReader> open_libav_reader(const std::string& path) {
  return std::make_unique<LibavVideoReader>(path);
}

std::unique_ptr<VideoWriter> open_libav_writer(const std::string& path, int width, int height, double fps) {
  return std::make_unique<AvWriter>(path, width, height, fps);
}

}  // namespace media_detail

using namespace media_detail;

RgbImage read_image(const std::string& path) {
  require_regular_file(path, "image");
  check_png_header(path);
  AvSource src(path);
  RgbImage img;
  int64_t pts;
  SEGMUX_CHECK(src.next(&img, &pts), "'", path, "': no image could be decoded");
  // A video or an animated image is not one image: using its first frame silently would hide the mistake.
  RgbImage second;
  SEGMUX_CHECK(!src.next(&second, &pts), "'", path,
               "' holds more than one frame (a video or an animated image), not a single image; track it as a "
               "video or extract the frame you want");
  return img;
}

}  // namespace segmux::pipeline
