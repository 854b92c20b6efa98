// Live input (media/live_stream.h): a pipe on standard input, an HTTP stream from a server on
// loopback started and stopped by the test, a libavdevice source, the queue policies, and the errors.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "pipeline/media/live_stream.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

constexpr int kW = 32, kH = 24;

// A YUV4MPEG2 stream (4:4:4) of `n` frames whose luma is 10 * frame number: a container libav reads
// from a pipe or a socket, made by hand.
std::string y4m_stream(int n) {
  std::string s = "YUV4MPEG2 W" + std::to_string(kW) + " H" + std::to_string(kH) + " F10:1 Ip A1:1 C444\n";
  for (int f = 0; f < n; ++f) {
    s += "FRAME\n";
    s.append(size_t(kW) * kH, char(10 * f + 16));
    s.append(size_t(kW) * kH * 2, char(128));
  }
  return s;
}

// Raw rgb24 frames whose every byte is the frame number.
std::string raw_frames(int n) {
  std::string s;
  for (int f = 0; f < n; ++f) s.append(size_t(kW) * kH * 3, char(f));
  return s;
}

// Standard input replaced by a pipe the test writes (then closes) for the test's duration.
class StdinPipe {
 public:
  explicit StdinPipe(std::string data) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    saved_ = dup(0);
    dup2(fds[0], 0);
    close(fds[0]);
    writer_ = std::thread([fd = fds[1], data = std::move(data)] {
      size_t at = 0;
      while (at < data.size()) {
        const ssize_t n = write(fd, data.data() + at, data.size() - at);
        if (n <= 0) break;
        at += size_t(n);
      }
      close(fd);
    });
  }
  ~StdinPipe() {
    writer_.join();
    dup2(saved_, 0);
    close(saved_);
  }

 private:
  int saved_ = -1;
  std::thread writer_;
};

// One-connection HTTP server on 127.0.0.1 (an ephemeral port): answers the first request with `body`
// (or, silent = true, accepts and never answers). Stopped and joined by the destructor.
class LoopbackHttp {
 public:
  LoopbackHttp(std::string body, bool silent = false) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(listen(fd_, 1), 0);
    timeval tv{5, 0};  // bounded: the accept gives up after 5 s
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    thread_ = std::thread([this, body = std::move(body), silent] {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char req[4096];
      (void)!read(c, req, sizeof req);
      if (silent) {
        for (int i = 0; i < 50 && !done_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      } else {
        const std::string head =
            "HTTP/1.1 200 OK\r\nContent-Type: video/x-yuv4mpeg\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n";
        (void)!write(c, head.data(), head.size());
        size_t at = 0;
        while (at < body.size()) {
          const ssize_t n = write(c, body.data() + at, body.size() - at);
          if (n <= 0) break;
          at += size_t(n);
        }
      }
      close(c);
    });
  }
  ~LoopbackHttp() {
    done_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/live.y4m"; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

std::vector<LiveFrame> drain(LiveStream& s) {
  std::vector<LiveFrame> out;
  while (auto f = s.next()) out.push_back(std::move(*f));
  return out;
}

// Waits (bounded) until the reader has decoded `n` frames.
void wait_decoded(const LiveStream& s, int n) {
  for (int i = 0; i < 500 && s.decoded() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(s.decoded(), n);
}

}  // namespace

TEST(LiveStream, RecognisesLiveInputs) {
  EXPECT_TRUE(is_live_input("-"));
  EXPECT_TRUE(is_live_input("rtsp://camera.local/stream"));
  EXPECT_TRUE(is_live_input("http://127.0.0.1:8080/live.m3u8"));
  EXPECT_TRUE(is_live_input("lavfi:testsrc"));
  EXPECT_FALSE(is_live_input("video.mp4"));
  EXPECT_FALSE(is_live_input("frames/"));
  EXPECT_FALSE(is_live_input("nosuchdevice:/dev/video0"));
}

TEST(LiveStream, RawFramesFromAPipeInOrder) {
  StdinPipe in(raw_frames(6));
  LiveStream s({.input = "-", .raw = "rgb24:32x24", .raw_fps = 10, .queue_frames = 2, .policy = LivePolicy::block});
  EXPECT_EQ(s.width(), kW);
  EXPECT_EQ(s.height(), kH);
  const auto frames = drain(s);
  ASSERT_EQ(frames.size(), 6u);  // block: nothing dropped, though the queue holds 2
  for (int f = 0; f < 6; ++f) {
    EXPECT_EQ(frames[size_t(f)].number, f);
    EXPECT_EQ(frames[size_t(f)].image.pixels[0], f);
    ASSERT_TRUE(frames[size_t(f)].time_s.has_value());
    EXPECT_NEAR(*frames[size_t(f)].time_s, f / 10.0, 1e-9);
  }
  EXPECT_EQ(s.dropped(), 0);
}

TEST(LiveStream, ContainerStreamFromAPipe) {
  StdinPipe in(y4m_stream(3));
  LiveStream s({.input = "-", .policy = LivePolicy::block});
  const auto frames = drain(s);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[2].number, 2);
}

TEST(LiveStream, HttpStreamOnLoopback) {
  LoopbackHttp server(y4m_stream(5));
  LiveStream s({.input = server.url(), .policy = LivePolicy::block, .timeout_s = 5});
  EXPECT_EQ(s.width(), kW);
  const auto frames = drain(s);
  ASSERT_EQ(frames.size(), 5u);
  // Luma 10 * f + 16 in full-range-less BT.601 is gray: brighter frame after frame.
  for (size_t f = 1; f < frames.size(); ++f) EXPECT_GT(frames[f].image.pixels[0], frames[f - 1].image.pixels[0]);
}

TEST(LiveStream, DropOldestKeepsTheNewestFrames) {
  StdinPipe in(raw_frames(8));
  LiveStream s({.input = "-", .raw = "rgb24:32x24", .queue_frames = 3, .policy = LivePolicy::drop_oldest});
  wait_decoded(s, 8);  // a consumer slower than the stream: nothing taken until all arrived
  const auto frames = drain(s);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].number, 5);
  EXPECT_EQ(frames[2].number, 7);
  EXPECT_EQ(s.dropped(), 5);
}

TEST(LiveStream, DropNewestKeepsTheFirstFrames) {
  StdinPipe in(raw_frames(8));
  LiveStream s({.input = "-", .raw = "rgb24:32x24", .queue_frames = 3, .policy = LivePolicy::drop_newest});
  wait_decoded(s, 8);
  const auto frames = drain(s);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].number, 0);
  EXPECT_EQ(frames[2].number, 2);
  EXPECT_EQ(s.dropped(), 5);
}

TEST(LiveStream, CaptureDeviceInput) {
  // libavdevice's lavfi input stands in for a camera: the same path as v4l2:/dev/video0.
  LiveStream s({.input = "lavfi:testsrc=size=32x24:rate=5:duration=1", .policy = LivePolicy::block});
  EXPECT_EQ(drain(s).size(), 5u);
}

TEST(LiveStream, ErrorsNameTheInput) {
  auto message = [](const LiveStreamOptions& o) {
    try {
      LiveStream s(o);
      drain(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({.input = "v4l2:/dev/segmux-no-such-camera"}).find("/dev/segmux-no-such-camera"),
            std::string::npos);
  EXPECT_NE(message({.input = "frames/"}).find("is not a live input"), std::string::npos);
  EXPECT_NE(message({.input = "-", .raw = "rgb24"}).find("PIXFMT:WxH"), std::string::npos);
  EXPECT_NE(message({.input = "-", .queue_frames = 0}).find("live queue"), std::string::npos);
  {
    LoopbackHttp silent("", true);  // accepts, never answers: the timeout ends the wait
    const auto t0 = std::chrono::steady_clock::now();
    const std::string m = message({.input = silent.url(), .timeout_s = 1});
    EXPECT_NE(m.find("nothing within 1 s"), std::string::npos) << m;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  }
  EXPECT_NE(message({.input = "-", .raw = "rgb24:32x24", .raw_fps = -1}).find("frame rate"), std::string::npos);
}

TEST(LiveStream, StopEndsTheWaitOnAPipeThatStaysOpen) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  const std::string frames = raw_frames(2);
  ASSERT_EQ(write(fds[1], frames.data(), frames.size()), ssize_t(frames.size()));  // fits the pipe buffer
  {
    LiveStream s({.input = "-", .raw = "rgb24:32x24", .policy = LivePolicy::block});
    EXPECT_TRUE(s.next().has_value());
    EXPECT_TRUE(s.next().has_value());
    // The writer keeps the pipe open and sends nothing more: the reader waits; stop() and the
    // destructor must still end it at once.
    const auto t0 = std::chrono::steady_clock::now();
    s.stop();
    EXPECT_FALSE(s.next().has_value());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  }
  close(fds[1]);
  dup2(saved, 0);
  close(saved);
}
