// Animated GIFs through giflib: the reader (frames composed on a canvas, sizes checked before any
// allocation) and the writer (one palette for all frames, gif_palette.h).
#include <fcntl.h>
#include <gif_lib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "io/files.h"
#include "pipeline/media/gif_palette.h"
#include "pipeline/media/media_detail.h"

namespace segmux::pipeline::media_detail {

namespace {

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

}  // namespace

std::unique_ptr<VideoReader> open_gif_reader(const std::string& path) { return std::make_unique<GifReader>(path); }

std::unique_ptr<VideoWriter> open_gif_writer(const std::string& path, int width, int height, double fps) {
  return std::make_unique<GifWriter>(path, width, height, fps);
}

}  // namespace segmux::pipeline::media_detail
