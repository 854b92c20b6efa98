#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error_text.h"
#include "core/error.h"
#include "pipeline/media/video_io.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

static std::string fixture_video() { return std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video"; }

static RgbImage gradient(int w, int h, int t) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = pixel_at(img, x, y);
      p[0] = uint8_t(x * 255 / w);
      p[1] = uint8_t(y * 255 / h);
      p[2] = uint8_t((t * 40) % 256);
    }
  return img;
}

static double mean_abs_diff(const RgbImage& a, const RgbImage& b) {
  double s = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return s / double(a.pixels.size());
}

TEST(VideoIo, FrameFolderIsReadInNameOrder) {
  auto r = open_video(fixture_video() + "/frames");
  EXPECT_EQ(r->num_frames(), 16);
  EXPECT_EQ(r->width(), 320);
  EXPECT_EQ(r->height(), 240);
  RgbImage f3 = r->frame(3);
  RgbImage again = read_image(fixture_video() + "/frames/00003.png");
  EXPECT_EQ(f3.pixels, again.pixels);
  EXPECT_THROW(r->frame(16), Error);
}

TEST(VideoIo, GifFramesMatchThePngsClosely) {
  auto gif = open_video(fixture_video() + "/video.gif");
  auto png = open_video(fixture_video() + "/frames");
  ASSERT_EQ(gif->num_frames(), png->num_frames());
  // The GIF is palette-quantised: close, not equal. Random access backwards works too.
  for (int i : {0, 5, 15, 2}) EXPECT_LT(mean_abs_diff(gif->frame(i), png->frame(i)), 12.0) << i;
}

TEST(VideoIo, Mp4RoundTripWithRandomAccess) {
  std::string path = ::testing::TempDir() + "/rt.mp4";
  {
    auto w = open_video_writer(path, 64, 48, 10);
    for (int t = 0; t < 12; ++t) w->add(gradient(64, 48, t));
    w->finish();
  }
  auto r = open_video(path);
  ASSERT_EQ(r->num_frames(), 12);
  EXPECT_EQ(r->width(), 64);
  for (int i : {0, 1, 2, 11, 5, 6, 3}) EXPECT_LT(mean_abs_diff(r->frame(i), gradient(64, 48, i)), 8.0) << i;
}

TEST(VideoIo, GifWriterRoundTrip) {
  std::string path = ::testing::TempDir() + "/rt.gif";
  auto w = open_video_writer(path, 31, 17, 5);  // odd sizes
  for (int t = 0; t < 3; ++t) w->add(gradient(31, 17, t));
  w->finish();
  auto r = open_video(path);
  ASSERT_EQ(r->num_frames(), 3);
  EXPECT_LT(mean_abs_diff(r->frame(2), gradient(31, 17, 2)), 30.0);
}

TEST(VideoIo, GrayPngRoundTrip16Bit) {
  std::string path = ::testing::TempDir() + "/ids.png";
  std::vector<uint16_t> v = {0, 1, 300, 65535, 7, 9};
  write_png_gray(path, 3, 2, v, true);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_THROW(write_png_gray(path, 3, 2, v, false), Error);  // 300 needs 16 bits
}

TEST(VideoIo, BadInputsAreClearErrors) {
  EXPECT_THROW(open_video("/nonexistent/video.mp4"), Error);
  std::string junk = ::testing::TempDir() + "/junk.mp4";
  std::ofstream(junk) << "this is not a video";
  EXPECT_THROW(open_video(junk), Error);
  std::string bad_gif = ::testing::TempDir() + "/junk.gif";
  std::ofstream(bad_gif) << "GIF89a garbage";
  EXPECT_THROW(open_video(bad_gif), Error);
  std::string empty_dir = ::testing::TempDir() + "/empty_frames";
  fs::create_directories(empty_dir);
  EXPECT_THROW(open_video(empty_dir), Error);
  // A failed write leaves nothing behind.
  EXPECT_THROW(open_video_writer("/nonexistent-dir/x.gif", 4, 4, 10), Error);
}

// Hostile media, built byte by byte: sizes are checked against the documented limits before anything
// of that size is allocated, and every error names the file.
namespace {

void put16(std::string& s, int v) {
  s += char(v & 0xff);
  s += char((v >> 8) & 0xff);
}

// A GIF with a canvas of cw x ch and one frame of fw x fh holding the pixel data of a 1x1 frame
// (so a larger frame is truncated).
std::string gif_bytes(int cw, int ch, int fw, int fh) {
  std::string s = "GIF89a";
  put16(s, cw);
  put16(s, ch);
  s += std::string("\x80\x00\x00", 3);              // 2-entry global colour table
  s += std::string("\xff\xff\xff\x00\x00\x00", 6);  // white, black
  s += '\x2c';
  put16(s, 0);
  put16(s, 0);
  put16(s, fw);
  put16(s, fh);
  s += '\x00';
  s += std::string("\x02\x02\x44\x01\x00", 5);  // LZW: one pixel of colour 0
  s += '\x3b';
  return s;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + "/hostile_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

using segmux::test::error_of;

}  // namespace

TEST(VideoIoHostile, GifSizesAreCappedBeforeAllocating) {
  const std::string fine = write_temp("fine.gif", gif_bytes(4, 3, 1, 1));
  auto r = open_video(fine);
  EXPECT_EQ(r->width(), 4);
  EXPECT_EQ(r->frame(0).pixels[0], 255);  // colour 0 is white
  // The report's 799-byte GIF declared a 12000x12000 canvas: 4.2 GB.
  const std::string canvas = write_temp("canvas.gif", gif_bytes(12000, 12000, 1, 1));
  std::string e = error_of([&] { open_video(canvas); });
  EXPECT_HAS(e, canvas);
  EXPECT_HAS(e, "12000x12000");
  EXPECT_HAS(e, "64 Mpixel");
  // A frame larger than the limit inside a small canvas.
  const std::string frame = write_temp("frame.gif", gif_bytes(16, 16, 65535, 65535));
  e = error_of([&] { open_video(frame); });
  EXPECT_HAS(e, frame);
  EXPECT_HAS(e, "frame 0 is 65535x65535");
}

TEST(VideoIoHostile, MalformedGifsNameTheFile) {
  const std::string good = gif_bytes(4, 4, 2, 2);  // 2x2 frame with data for one pixel
  struct Case {
    std::string name, bytes;
  };
  const std::vector<Case> cases = {
      {"zero_width_frame.gif", gif_bytes(4, 4, 0, 1)},  // "basic_string: construction from null" before
      {"zero_canvas.gif", gif_bytes(0, 0, 1, 1)},      {"truncated_pixels.gif", good},
      {"cut_header.gif", good.substr(0, 20)},          {"cut_frame.gif", good.substr(0, good.size() - 5)},
      {"no_frames.gif", good.substr(0, 19) + ";"},
  };
  for (const Case& c : cases) {
    const std::string path = write_temp(c.name, c.bytes);
    std::string e = error_of([&] {
      auto r = open_video(path);
      r->frame(0);
    });
    SCOPED_TRACE(c.name);
    EXPECT_HAS(e, path);
    EXPECT_EQ(e.find("basic_string"), std::string::npos) << e;
    EXPECT_EQ(e.find("(no error)"), std::string::npos) << e;
  }
}

TEST(VideoIoHostile, PngSizeIsCheckedBeforeDecoding) {
  auto be32 = [](std::string& s, uint32_t v) {
    for (int k = 3; k >= 0; --k) s += char((v >> (8 * k)) & 0xff);
  };
  auto png = [&](uint32_t w, uint32_t h) {
    std::string s("\x89PNG\r\n\x1a\n", 8);
    be32(s, 13);
    s += "IHDR";
    be32(s, w);
    be32(s, h);
    s += std::string("\x08\x02\x00\x00\x00", 5);
    be32(s, 0);  // CRC: not needed, the size is refused first
    return s;
  };
  for (auto [w, h] : {std::pair<uint32_t, uint32_t>{10000, 10000}, {100000, 100000}, {0x7fffffff, 2}}) {
    const std::string path = write_temp("huge_" + std::to_string(w) + ".png", png(w, h));
    std::string e = error_of([&] { read_image(path); });
    EXPECT_HAS(e, path);
    EXPECT_HAS(e, "Mpixel");
  }
  // A frame folder whose first frame is such a PNG.
  const std::string dir = ::testing::TempDir() + "/hostile_png_folder";
  fs::create_directories(dir);
  std::ofstream(dir + "/00000.png", std::ios::binary) << png(20000, 20000);
  EXPECT_HAS(error_of([&] { open_video(dir); }), "Mpixel");
  const std::string truncated = write_temp("short.png", png(4, 4).substr(0, 12));
  EXPECT_HAS(error_of([&] { read_image(truncated); }), truncated);
}

// Found by fuzz_media (the process ran out of memory for new threads): a file refused while its
// demuxer or decoder was being opened (here a PNG header with no image data) leaked the format and
// codec contexts, because a throwing constructor runs no destructor. Under ASan (scripts/test.sh)
// LeakSanitizer fails this test if a refusal leaks them.
TEST(VideoIo, RefusedImagesReleaseTheirDecoder) {
  const unsigned char bytes[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0,    0,   0, 13,
                                 'I',  'H', 'D', 'R', 0,    0,    0,    3,    0,    0,   0, 2,
                                 16,   0,   0,   0,   0,    0xe8, 0x8f, 0xe5, 0x85, 0,   0, 0,
                                 0x16, 0,   'I', 'E', 'N',  'D',  0xae, 0x42, 0x60, 0x82};
  const std::string path = ::testing::TempDir() + "/refused_decoder.png";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  for (int i = 0; i < 3; ++i) EXPECT_HAS(error_of([&] { read_image(path); }), path);
}
