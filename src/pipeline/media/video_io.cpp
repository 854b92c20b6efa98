#include "pipeline/media/video_io.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}
#include <fcntl.h>
#include <gif_lib.h>
#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>

#include "core/error.h"
#include "io/files.h"
#include "io/paths.h"
#include "io/printable.h"
#include "pipeline/media/gif_palette.h"
#include "pipeline/media/rotation.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

std::string av_error(int code) {
  char buf[256];
  av_strerror(code, buf, sizeof buf);
  return buf;
}

std::string lower_ext(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

bool is_image_ext(const std::string& e) {
  return e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".bmp" || e == ".webp" || e == ".tif" || e == ".tiff" ||
         e == ".ppm";
}

std::string temp_path_for(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void commit_temp(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("cannot write '", path, "': ", std::strerror(errno));
  }
}

// Refuses a frame size beyond kMaxFramePixels (or not positive); `what` names the file and the thing.
void check_frame_size(int64_t width, int64_t height, const std::string& what) {
  SEGMUX_CHECK(width > 0 && height > 0, what, " has no size (", width, "x", height, ")");
  SEGMUX_CHECK(width <= kMaxFramePixels / height, what, " is ", width, "x", height, " = ", width * height,
               " pixels, more than the limit of ", kMaxFramePixels >> 20, " Mpixel");
}

uint32_t big_endian_u32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// A PNG's declared size, read from its header before any decoder sees the file (decoders allocate the
// frame as declared). Files that are not PNG pass: libav's own checks and to_rgb's apply to them.
void check_png_header(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return;  // libav reports why it cannot be opened
  unsigned char h[24] = {};
  size_t n = std::fread(h, 1, sizeof h, f);
  std::fclose(f);
  static const unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n < 8 || std::memcmp(h, kPngSignature, 8) != 0) return;
  SEGMUX_CHECK(n == sizeof h && std::memcmp(h + 12, "IHDR", 4) == 0, "'", path,
               "' is not a readable PNG: it has no image header (IHDR)");
  check_frame_size(big_endian_u32(h + 16), big_endian_u32(h + 20), "PNG image '" + path + "'");
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

// One open media file with a decoder. Used for videos and for single images.
class AvSource {
 public:
  explicit AvSource(const std::string& path) : path_(path) {
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
    int rc = avformat_open_input(&fmt_, path.c_str(), nullptr, nullptr);
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

class FolderReader : public VideoReader {
 public:
  FolderReader(const std::string& dir, double fps) : dir_(dir), fps_(fps) {
    SEGMUX_CHECK(fps >= 0 && std::isfinite(fps), "frame rate ", fps, " for '", dir, "' is not positive");
    for (auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && is_image_ext(lower_ext(e.path().string()))) files_.push_back(e.path().string());
    std::sort(files_.begin(), files_.end());
    SEGMUX_CHECK(!files_.empty(), "folder '", dir, "' has no image files (png, jpg, ...)");
    RgbImage first = read_image(files_[0]);
    width_ = first.width;
    height_ = first.height;
  }
  int num_frames() const override { return int(files_.size()); }
  int width() const override { return width_; }
  int height() const override { return height_; }
  double fps() const override { return fps_ > 0 ? fps_ : 25.0; }
  std::optional<double> time_s(int index) const override {
    if (fps_ <= 0) return std::nullopt;
    return double(index) / fps_;
  }
  std::string describe() const override {
    return dir_ + ": " + std::to_string(files_.size()) + " frames " + std::to_string(width_) + "x" +
           std::to_string(height_) + " (image folder" + (fps_ > 0 ? ", " + std::to_string(fps_) + " fps" : "") + ")";
  }
  RgbImage frame(int index) override {
    SEGMUX_CHECK(index >= 0 && index < num_frames(), "frame ", index, " is outside the folder (", num_frames(),
                 " frames)");
    RgbImage img = read_image(files_[size_t(index)]);
    SEGMUX_CHECK(img.width == width_ && img.height == height_, "'", files_[size_t(index)], "' is ", img.width, "x",
                 img.height, " but the first frame is ", width_, "x", height_);
    return img;
  }

 private:
  std::string dir_;
  double fps_ = 0;
  std::vector<std::string> files_;
  int width_ = 0, height_ = 0;
};

// Every GIF frame becomes a whole canvas once composed, however few pixels it stores (a 97-byte GIF
// declared an 8000x8000 canvas: 3.2 GB and a minute). So beyond the limits every frame has
// (kMaxFramePixels, kMaxGifTotalPixels of stored pixels), a GIF canvas holds at most 16 Mpixel
// (4096x4096; GIF animations are far smaller) and canvas x frames is at most 256 Mpixel (e.g. 1000
// frames of 512x512), checked at each frame's header, before its pixels are decoded.
constexpr int64_t kMaxGifCanvasPixels = int64_t(16) << 20;
constexpr int64_t kMaxGifComposedPixels = int64_t(256) << 20;

// giflib's message for an error code; never null (giflib has no text for some codes).
std::string gif_error(int code) {
  const char* s = GifErrorString(code);
  return s ? s : "giflib error " + std::to_string(code);
}

// Reads the frames of an open GIF like DGifSlurp, but checks each frame's declared size against the
// limits before allocating its pixels.
void read_gif_frames(GifFileType* gif, const std::string& path) {
  auto failed = [&](const char* doing) {
    fail("'", path, "' is not a readable GIF: ", doing, ": ", gif_error(gif->Error));
  };
  int64_t total = 0;
  GifRecordType type = UNDEFINED_RECORD_TYPE;
  do {
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) {
      if (gif->ImageCount > 0) break;  // a missing trailer after whole frames: tolerated, as browsers do
      failed("reading a block");
    }
    if (type == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(gif) == GIF_ERROR) failed("reading a frame header");
      SavedImage& im = gif->SavedImages[gif->ImageCount - 1];
      const GifImageDesc& d = im.ImageDesc;
      const std::string what = "GIF '" + path + "' frame " + std::to_string(gif->ImageCount - 1);
      check_frame_size(d.Width, d.Height, what);
      total += int64_t(d.Width) * d.Height;
      SEGMUX_CHECK(total <= kMaxGifTotalPixels, "GIF '", path, "': its frames hold more than ",
                   kMaxGifTotalPixels >> 20, " Mpixel together (the limit)");
      const int64_t composed = int64_t(gif->ImageCount) * gif->SWidth * gif->SHeight;
      SEGMUX_CHECK(composed <= kMaxGifComposedPixels, "GIF '", path, "': ", gif->ImageCount, " frames of its ",
                   gif->SWidth, "x", gif->SHeight, " canvas are more than ", kMaxGifComposedPixels >> 20,
                   " Mpixel to compose (the limit)");
      // malloc: DGifCloseFile frees it.
      im.RasterBits = static_cast<GifPixelType*>(std::malloc(size_t(d.Width) * size_t(d.Height)));
      SEGMUX_CHECK(im.RasterBits != nullptr, what, ": out of memory");
      if (d.Interlace) {
        static const int first_row[] = {0, 4, 2, 1}, row_step[] = {8, 8, 4, 2};
        for (int pass = 0; pass < 4; ++pass)
          for (int y = first_row[pass]; y < d.Height; y += row_step[pass])
            if (DGifGetLine(gif, im.RasterBits + size_t(y) * size_t(d.Width), d.Width) == GIF_ERROR)
              failed("decoding a frame");
      } else if (DGifGetLine(gif, im.RasterBits, d.Width * d.Height) == GIF_ERROR) {
        failed("decoding a frame");
      }
      // The extensions read since the previous frame (timing, transparency) belong to this one.
      im.ExtensionBlocks = gif->ExtensionBlocks;
      im.ExtensionBlockCount = gif->ExtensionBlockCount;
      gif->ExtensionBlocks = nullptr;
      gif->ExtensionBlockCount = 0;
    } else if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* data = nullptr;
      if (DGifGetExtension(gif, &code, &data) == GIF_ERROR) failed("reading an extension");
      for (bool first = true; data != nullptr; first = false) {
        SEGMUX_CHECK(GifAddExtensionBlock(&gif->ExtensionBlockCount, &gif->ExtensionBlocks,
                                          first ? code : CONTINUE_EXT_FUNC_CODE, data[0], &data[1]) == GIF_OK,
                     "GIF '", path, "': out of memory");
        if (DGifGetExtensionNext(gif, &data) == GIF_ERROR) failed("reading an extension");
      }
    }
  } while (type != TERMINATE_RECORD_TYPE);
}

// Animated GIF: composes frames on a canvas honouring disposal methods and transparency.
class GifReader : public VideoReader {
 public:
  explicit GifReader(const std::string& path) : path_(path) {
    int err = 0;
    gif_ = DGifOpenFileName(path.c_str(), &err);
    SEGMUX_CHECK(gif_ != nullptr, "cannot open GIF '", path, "': ", gif_error(err));
    try {
      check_frame_size(gif_->SWidth, gif_->SHeight, "GIF '" + path + "' canvas");
      SEGMUX_CHECK(int64_t(gif_->SWidth) * gif_->SHeight <= kMaxGifCanvasPixels, "GIF '", path, "' canvas is ",
                   gif_->SWidth, "x", gif_->SHeight, " = ", int64_t(gif_->SWidth) * gif_->SHeight,
                   " pixels, more than the GIF limit of ", kMaxGifCanvasPixels >> 20, " Mpixel");
      read_gif_frames(gif_, path);
      SEGMUX_CHECK(gif_->ImageCount > 0, "'", path, "' has no frames");
    } catch (...) {
      DGifCloseFile(gif_, &err);
      gif_ = nullptr;
      throw;
    }
    double total_delay = 0;
    for (int i = 0; i < gif_->ImageCount; ++i) {
      start_cs_.push_back(total_delay);
      GraphicsControlBlock gcb;
      if (DGifSavedExtensionToGCB(gif_, i, &gcb) == GIF_OK) total_delay += gcb.DelayTime;
    }
    if (total_delay <= 0) start_cs_.clear();  // no timing in the file
    fps_ = total_delay > 0 ? 100.0 * gif_->ImageCount / total_delay : 10.0;
    restart();
  }
  ~GifReader() override {
    int err = 0;
    if (gif_) DGifCloseFile(gif_, &err);
  }
  int num_frames() const override { return gif_->ImageCount; }
  int width() const override { return gif_->SWidth; }
  int height() const override { return gif_->SHeight; }
  double fps() const override { return fps_; }
  std::optional<double> time_s(int index) const override {
    if (start_cs_.empty()) return std::nullopt;
    return start_cs_.at(size_t(index)) / 100.0;
  }
  std::string describe() const override {
    return path_ + ": " + std::to_string(num_frames()) + " frames " + std::to_string(width()) + "x" +
           std::to_string(height()) + " (GIF)";
  }
  RgbImage frame(int index) override {
    SEGMUX_CHECK(index >= 0 && index < num_frames(), "frame ", index, " is outside the GIF (", num_frames(),
                 " frames)");
    if (index < composed_) restart();
    while (composed_ <= index) compose_next();
    return canvas_;
  }

 private:
  void restart() {
    canvas_.width = gif_->SWidth;
    canvas_.height = gif_->SHeight;
    canvas_.pixels.assign(size_t(canvas_.width) * size_t(canvas_.height) * 3, 0);
    composed_ = 0;
    pending_dispose_ = DISPOSAL_UNSPECIFIED;
  }
  void compose_next() {
    const SavedImage& im = gif_->SavedImages[composed_];
    const GifImageDesc& d = im.ImageDesc;
    // Apply the previous frame's disposal first.
    if (pending_dispose_ == DISPOSE_BACKGROUND) {
      clear_rect(prev_rect_[0], prev_rect_[1], prev_rect_[2], prev_rect_[3]);
    } else if (pending_dispose_ == DISPOSE_PREVIOUS && !saved_.pixels.empty()) {
      canvas_ = saved_;
    }
    GraphicsControlBlock gcb{};
    gcb.TransparentColor = NO_TRANSPARENT_COLOR;
    DGifSavedExtensionToGCB(gif_, composed_, &gcb);
    if (gcb.DisposalMode == DISPOSE_PREVIOUS) saved_ = canvas_;
    const ColorMapObject* cmap = d.ColorMap ? d.ColorMap : gif_->SColorMap;
    SEGMUX_CHECK(cmap != nullptr, "'", path_, "' frame ", composed_, " has no colour map");
    for (int y = 0; y < d.Height; ++y) {
      int cy = d.Top + y;
      if (cy < 0 || cy >= canvas_.height) continue;
      for (int x = 0; x < d.Width; ++x) {
        int cx = d.Left + x;
        if (cx < 0 || cx >= canvas_.width) continue;
        int c = im.RasterBits[size_t(y) * size_t(d.Width) + size_t(x)];
        if (c == gcb.TransparentColor || c >= cmap->ColorCount) continue;
        uint8_t* p = pixel_at(canvas_, cx, cy);
        p[0] = cmap->Colors[c].Red;
        p[1] = cmap->Colors[c].Green;
        p[2] = cmap->Colors[c].Blue;
      }
    }
    pending_dispose_ = gcb.DisposalMode;
    prev_rect_[0] = d.Left;
    prev_rect_[1] = d.Top;
    prev_rect_[2] = d.Width;
    prev_rect_[3] = d.Height;
    ++composed_;
  }
  void clear_rect(int left, int top, int w, int h) {
    for (int y = std::max(0, top); y < std::min(canvas_.height, top + h); ++y)
      for (int x = std::max(0, left); x < std::min(canvas_.width, left + w); ++x) {
        uint8_t* p = pixel_at(canvas_, x, y);
        p[0] = p[1] = p[2] = 0;
      }
  }

  std::string path_;
  GifFileType* gif_ = nullptr;
  double fps_ = 10;
  std::vector<double> start_cs_;  // each frame's start in centiseconds (empty: the GIF has no delays)
  RgbImage canvas_, saved_;
  int composed_ = 0;
  int pending_dispose_ = DISPOSAL_UNSPECIFIED;
  int prev_rect_[4] = {0, 0, 0, 0};
};

}  // namespace

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

std::unique_ptr<VideoReader> open_video(const std::string& path, double folder_fps) {
  SEGMUX_CHECK(fs::exists(path), "input '", path, "' does not exist");
  if (fs::is_directory(path)) return std::make_unique<FolderReader>(path, folder_fps);
  require_regular_file(path, "input");  // a FIFO blocked the decoder's open for ever
  if (lower_ext(path) == ".gif") return std::make_unique<GifReader>(path);
  return std::make_unique<LibavVideoReader>(path);
}

namespace {

void write_png(const std::string& path, int width, int height, int color_type, int bit_depth,
               const std::vector<const uint8_t*>& rows, const std::vector<std::array<uint8_t, 3>>* palette = nullptr) {
  AtomicFile out(path);
  std::vector<png_color> plte;  // before setjmp: a longjmp must not skip its destructor
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    const int err = errno;  // libpng's write function fails on a short fwrite: say why
    png_destroy_write_struct(&png, &info);
    out.fail_write(err);
  }
  png_init_io(png, out.stream());
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), bit_depth, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (palette) {
    for (const auto& c : *palette) plte.push_back(png_color{c[0], c[1], c[2]});
    png_set_PLTE(png, info, plte.data(), int(plte.size()));
  }
  png_write_info(png, info);
  if (bit_depth == 16) png_set_swap(png);  // our buffers are little-endian u16
  for (const uint8_t* r : rows) png_write_row(png, r);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  out.commit();
}

}  // namespace

void write_png_rgb(const std::string& path, const RgbImage& img) {
  std::vector<const uint8_t*> rows;
  for (int y = 0; y < img.height; ++y) rows.push_back(pixel_at(img, 0, y));
  write_png(path, img.width, img.height, PNG_COLOR_TYPE_RGB, 8, rows);
}

void write_png_gray(const std::string& path, int width, int height, const std::vector<uint16_t>& values,
                    bool sixteen_bit) {
  SEGMUX_CHECK(values.size() == size_t(width) * size_t(height), "write_png_gray: ", values.size(), " values for ",
               width, "x", height);
  std::vector<uint8_t> buf;
  std::vector<const uint8_t*> rows;
  if (sixteen_bit) {
    for (int y = 0; y < height; ++y)
      rows.push_back(reinterpret_cast<const uint8_t*>(&values[size_t(y) * size_t(width)]));
  } else {
    buf.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      SEGMUX_CHECK(values[i] < 256, "write_png_gray: value ", values[i], " needs 16 bits");
      buf[i] = uint8_t(values[i]);
    }
    for (int y = 0; y < height; ++y) rows.push_back(&buf[size_t(y) * size_t(width)]);
  }
  write_png(path, width, height, PNG_COLOR_TYPE_GRAY, sixteen_bit ? 16 : 8, rows);
}

void write_png_palette(const std::string& path, int width, int height, const std::vector<uint8_t>& indices,
                       const std::vector<std::array<uint8_t, 3>>& palette) {
  SEGMUX_CHECK(indices.size() == size_t(width) * size_t(height), "write_png_palette: ", indices.size(), " indices for ",
               width, "x", height);
  SEGMUX_CHECK(!palette.empty() && palette.size() <= 256, "write_png_palette: ", palette.size(),
               " palette entries (1 to 256)");
  for (uint8_t i : indices)
    SEGMUX_CHECK(i < palette.size(), "write_png_palette: index ", int(i), " beyond the ", palette.size(),
                 "-entry palette");
  std::vector<const uint8_t*> rows;
  for (int y = 0; y < height; ++y) rows.push_back(&indices[size_t(y) * size_t(width)]);
  write_png(path, width, height, PNG_COLOR_TYPE_PALETTE, 8, rows, &palette);
}

namespace {

// Frames are quantised to one palette made for them (gif_palette.h): pass 1 runs while frames come in,
// which are kept as raw RGB in an anonymous temporary file (disk, not memory) for pass 2 at finish().
class GifWriter : public VideoWriter {
 public:
  GifWriter(const std::string& path, int width, int height, double fps)
      : path_(path), tmp_(temp_path_for(path)), width_(width), height_(height), palette_(width, height) {
    delay_cs_ = std::max(2, int(100.0 / std::max(1.0, fps) + 0.5));
    spool_ = std::tmpfile();
    SEGMUX_CHECK(spool_ != nullptr, "cannot write GIF '", path, "': no temporary file: ", std::strerror(errno));
    int err = 0;
    // Opened here, not by EGifOpenFileName: giflib creates its file 0600, the other outputs are 0666
    // less the umask.
    const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) std::fclose(spool_);
    SEGMUX_CHECK(fd >= 0, "cannot write GIF '", path, "': ", std::strerror(errno));
    gif_ = EGifOpenFileHandle(fd, &err);
    if (!gif_) {
      ::close(fd);
      std::remove(tmp_.c_str());
      std::fclose(spool_);
    }
    SEGMUX_CHECK(gif_ != nullptr, "cannot write GIF '", path, "': ", gif_error(err));
  }
  ~GifWriter() override {
    if (gif_) {
      int err = 0;
      EGifCloseFile(gif_, &err);
      std::remove(tmp_.c_str());
    }
    std::fclose(spool_);
  }
  void add(const RgbImage& f) override {
    SEGMUX_CHECK(f.width == width_ && f.height == height_, "GIF frame size ", f.width, "x", f.height, " differs from ",
                 width_, "x", height_);
    palette_.add_for_palette(f);
    SEGMUX_CHECK(std::fwrite(f.pixels.data(), 1, f.pixels.size(), spool_) == f.pixels.size(), "cannot write GIF '",
                 path_, "': temporary file: disk full?");
    ++frames_;
  }
  void finish() override {
    SEGMUX_CHECK(frames_ > 0, "cannot write GIF '", path_, "': no frames");
    std::rewind(spool_);
    RgbImage f;
    f.width = width_;
    f.height = height_;
    f.pixels.resize(size_t(width_) * size_t(height_) * 3);
    for (int i = 0; i < frames_; ++i) {
      SEGMUX_CHECK(std::fread(f.pixels.data(), 1, f.pixels.size(), spool_) == f.pixels.size(), "cannot write GIF '",
                   path_, "': temporary file cannot be read back");
      for (const auto& p : palette_.map(f)) put_frame(p);
    }
    for (const auto& p : palette_.finish_mapping()) put_frame(p);
    SEGMUX_CHECK(written_ == frames_, "cannot write GIF '", path_, "': ", written_, " of ", frames_,
                 " frames came out of the palette mapping");
    int err = 0;
    int rc = EGifCloseFile(gif_, &err);
    gif_ = nullptr;
    if (rc != GIF_OK) {
      std::remove(tmp_.c_str());
      fail("cannot write GIF '", path_, "': ", gif_error(err));
    }
    commit_temp(tmp_, path_);
  }

 private:
  void check(int rc) { SEGMUX_CHECK(rc == GIF_OK, "cannot write GIF '", path_, "': ", gif_error(gif_->Error)); }
  // The first frame's palette becomes the global colour map; a frame with another gets a local one.
  void put_frame(const PalettedFrame& p) {
    GifColorType colors[256] = {};
    for (size_t i = 0; i < 256; ++i) colors[i] = {p.palette[i][0], p.palette[i][1], p.palette[i][2]};
    ColorMapObject* map = GifMakeMapObject(256, colors);
    SEGMUX_CHECK(map != nullptr, "cannot write GIF '", path_, "': out of memory");
    bool local = false;
    if (written_ == 0) {
      global_ = p.palette;
      EGifSetGifVersion(gif_, true);
      const int rc = EGifPutScreenDesc(gif_, width_, height_, 8, 0, map);
      if (rc == GIF_OK) write_loop_extension();
      if (rc != GIF_OK) GifFreeMapObject(map);
      check(rc);
    } else {
      local = p.palette != global_;
    }
    GraphicsControlBlock gcb{};
    gcb.DisposalMode = DISPOSE_DO_NOT;
    gcb.DelayTime = delay_cs_;
    gcb.TransparentColor = NO_TRANSPARENT_COLOR;
    GifByteType ext[4];
    size_t len = EGifGCBToExtension(&gcb, ext);
    int rc = EGifPutExtension(gif_, GRAPHICS_EXT_FUNC_CODE, int(len), ext);
    if (rc == GIF_OK) rc = EGifPutImageDesc(gif_, 0, 0, width_, height_, false, local ? map : nullptr);
    for (int y = 0; y < height_ && rc == GIF_OK; ++y)
      rc = EGifPutLine(gif_, const_cast<GifPixelType*>(&p.indices[size_t(y) * size_t(width_)]), width_);
    GifFreeMapObject(map);
    check(rc);
    ++written_;
  }
  void write_loop_extension() {  // loop forever (NETSCAPE2.0 application extension)
    check(EGifPutExtensionLeader(gif_, APPLICATION_EXT_FUNC_CODE));
    check(EGifPutExtensionBlock(gif_, 11, "NETSCAPE2.0"));
    const unsigned char loop[3] = {1, 0, 0};
    check(EGifPutExtensionBlock(gif_, 3, loop));
    check(EGifPutExtensionTrailer(gif_));
  }
  std::string path_, tmp_;
  int width_, height_, delay_cs_;
  GifPalette palette_;
  FILE* spool_ = nullptr;
  int frames_ = 0, written_ = 0;
  GifFileType* gif_ = nullptr;
  std::vector<std::array<uint8_t, 3>> global_;
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

namespace {

// Throws unless open_video_writer can write `path`'s format (its extension).
void check_video_writer_path(const std::string& path) {
  // The encoders are H.264 / MPEG-4 (and GIF): other containers (.webm wants VP8/VP9/AV1) failed with
  // libav's bare "Invalid argument" after the file was created.
  const std::string ext = lower_ext(path);
  SEGMUX_CHECK(ext == ".mp4" || ext == ".mov" || ext == ".mkv" || ext == ".m4v" || ext == ".gif", "'", printable(path),
               "': cannot write a video as '", printable(ext.empty() ? "(no extension)" : ext),
               "': the video formats segmux writes are .mp4, .mov, .mkv, .m4v and .gif");
}

}  // namespace

std::unique_ptr<VideoWriter> open_video_writer(const std::string& path, int width, int height, double fps) {
  SEGMUX_CHECK(width > 0 && height > 0, "video writer: bad size ", width, "x", height);
  check_video_writer_path(path);
  if (lower_ext(path) == ".gif") return std::make_unique<GifWriter>(path, width, height, fps);
  return std::make_unique<AvWriter>(path, width, height, fps);
}

}  // namespace segmux::pipeline
