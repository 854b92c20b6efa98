// Hostile media, round two (issue 22): a FIFO as the video is refused at once (it blocked the decoder's
// open for ever), a GIF's composed work (canvas x frames) is bounded before its pixels are decoded, and
// an overlay format segmux cannot write is named as such.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "common/error_text.h"
#include "core/error.h"
#include "pipeline/media/video_io.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

std::string temp_file(const std::string& name) {
  return ::testing::TempDir() + "/hostile2_" + std::to_string(::getpid()) + "_" + name;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

using segmux::test::error_of;

// Runs fn in a child process (a hang must not hang the test): the child exits 0 when fn throws a
// segmux::Error containing `expected`, 1 for another outcome; killed after 20 s, reported as a hang.
std::string outcome_in_child(const std::function<void()>& fn, const std::string& expected) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string e = error_of(fn);
    ::_exit(e.find(expected) != std::string::npos ? 0 : 1);
  }
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 20) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "refused" : "another outcome";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return "hung";
}

void put16(std::string& s, int v) {
  s += char(v & 0xff);
  s += char((v >> 8) & 0xff);
}

// A GIF with a cw x ch canvas and `frames` frames of 1x1 pixel, each 15 bytes.
std::string gif_of_tiny_frames(int cw, int ch, int frames) {
  std::string s = "GIF89a";
  put16(s, cw);
  put16(s, ch);
  s += std::string("\x80\x00\x00", 3);              // 2-entry global colour table
  s += std::string("\xff\xff\xff\x00\x00\x00", 6);  // white, black
  for (int f = 0; f < frames; ++f) {
    s += '\x2c';
    put16(s, 0);
    put16(s, 0);
    put16(s, 1);
    put16(s, 1);
    s += '\x00';
    s += std::string("\x02\x02\x44\x01\x00", 5);  // LZW: one pixel of colour 0
  }
  s += '\x3b';
  return s;
}

}  // namespace

TEST(HostileMedia, AFifoIsRefusedNotWaitedOn) {
  const std::string fifo = temp_file("video.mp4");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Before: avformat_open_input waited for a writer for ever (track, segmux_session_open_video).
  EXPECT_EQ(outcome_in_child([&] { open_video(fifo); }, "input '" + fifo + "' is a named pipe (FIFO)"), "refused");
  EXPECT_EQ(outcome_in_child([&] { read_image(fifo); }, "image '" + fifo + "' is a named pipe (FIFO)"), "refused");
  const std::string gif_fifo = temp_file("video.gif");
  ASSERT_EQ(::mkfifo(gif_fifo.c_str(), 0600), 0) << std::strerror(errno);
  EXPECT_EQ(outcome_in_child([&] { open_video(gif_fifo); }, "is a named pipe (FIFO), not a regular file"), "refused");
  EXPECT_HAS(error_of([] { open_video("/dev/null"); }), "input '/dev/null' is a character device");
  ::unlink(fifo.c_str());
  ::unlink(gif_fifo.c_str());
}

TEST(HostileMedia, GifCanvasTimesFramesIsBoundedBeforeDecoding) {
  // The report's 97-byte GIF: an 8000x8000 canvas under the 64 Mpixel frame cap, one 1x1 frame.
  const std::string big = write_temp("canvas.gif", gif_of_tiny_frames(8000, 8000, 1));
  EXPECT_LE(std::ifstream(big, std::ios::binary | std::ios::ate).tellg(), 100);
  std::string e = error_of([&] { open_video(big); });
  EXPECT_HAS(e, big);
  EXPECT_HAS(e, "canvas is 8000x8000");
  EXPECT_HAS(e, "GIF limit of 16 Mpixel");
  // 2048x2048 x 65 frames = 272 Mpixel to compose from 1 KB of file.
  const std::string many = write_temp("many.gif", gif_of_tiny_frames(2048, 2048, 65));
  e = error_of([&] { open_video(many); });
  EXPECT_HAS(e, many);
  EXPECT_HAS(e, "65 frames of its 2048x2048 canvas are more than 256 Mpixel to compose");
  // At the limit it opens: 64 frames of 2048x2048.
  const std::string ok = write_temp("ok.gif", gif_of_tiny_frames(2048, 2048, 64));
  auto r = open_video(ok);
  EXPECT_EQ(r->num_frames(), 64);
  EXPECT_EQ(r->frame(63).pixels[0], 255);
}

TEST(HostileMedia, AnOverlayFormatThatCannotBeWrittenIsNamed) {
  // Before: libav's bare "Invalid argument" (no encoder of the .webm container's codecs).
  const std::string webm = temp_file("overlay.webm");
  const std::string e = error_of([&] { open_video_writer(webm, 16, 16, 10); });
  EXPECT_HAS(e, webm);
  EXPECT_HAS(e, "cannot write a video as '.webm'");
  EXPECT_HAS(e, ".mp4, .mov, .mkv, .m4v and .gif");
  EXPECT_EQ(e.find("Invalid argument"), std::string::npos) << e;
  EXPECT_NE(::access(webm.c_str(), F_OK), 0) << "a refused overlay left a file";
  EXPECT_HAS(error_of([&] { open_video_writer(temp_file("noext"), 16, 16, 10); }), "'(no extension)'");
}
