// Live input: frames decoded as they arrive from standard input ("-": a container stream such as
// MPEG-TS, Matroska, NUT or Y4M, or raw frames with `raw`), from a network stream FFmpeg reads (rtsp://,
// http(s)://, HLS .m3u8, udp://, tcp://, srt://...) or from a capture device of libavdevice
// ("v4l2:/dev/video0", "lavfi:testsrc=size=640x480:rate=25", any "DEVICE:NAME").
//
// A reader thread decodes into a queue of at most `queue_frames` frames; when the consumer (the
// model) is slower than the stream the policy decides:
//   drop-oldest  the queue keeps the newest frames: the oldest waiting frame is dropped (lowest latency)
//   drop-newest  the arriving frame is dropped while the queue is full (keeps a run of consecutive frames)
//   block        the reader waits: nothing is dropped; a pipe or TCP stream backs up at its sender
// Memory is bounded by the queue whatever the stream's length; every frame carries its arrival time
// so the consumer can report latency.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

enum class LivePolicy { drop_oldest, drop_newest, block };
LivePolicy parse_live_policy(const std::string& name);  // "drop-oldest", "drop-newest", "block"
const char* live_policy_name(LivePolicy policy);

struct LiveStreamOptions {
  std::string input;  // "-", a URL, or DEVICE:NAME
  // Raw frames on standard input: "PIXFMT:WxH", e.g. "rgb24:640x480" (libav pixel format names);
  // "" reads a container stream.
  std::string raw;
  double raw_fps = 25;  // the raw frames' rate (their timestamps)
  int queue_frames = 4;
  LivePolicy policy = LivePolicy::drop_oldest;
  double timeout_s = 10;  // opening, and waiting for data on a network stream, give up after this
};

// Whether `input` names a live source rather than a file or folder: "-", a URL (scheme://), or a
// libavdevice input "DEVICE:NAME" (v4l2, lavfi, x11grab, ...).
bool is_live_input(const std::string& input);

struct LiveFrame {
  RgbFrame image;
  int64_t number = 0;                             // index among the frames decoded from the stream (dropped ones count)
  std::optional<double> time_s;                   // the stream's presentation time, when it has one
  std::chrono::steady_clock::time_point arrived;  // when it was decoded
};

class LiveStream {
 public:
  // Opens the input (errors name it and say why) and starts decoding.
  explicit LiveStream(const LiveStreamOptions& opt);
  ~LiveStream();  // stops the reader thread
  LiveStream(const LiveStream&) = delete;
  LiveStream& operator=(const LiveStream&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }
  double fps() const { return fps_; }
  const std::string& describe() const { return description_; }
  // The next frame, waiting for it; nullopt once the stream ended (or stop() was called, or *cancel
  // became true while waiting: checked every 100 ms). A decoding or network error of the reader is
  // thrown here, naming the input, after the frames decoded before it.
  std::optional<LiveFrame> next(const std::atomic<bool>* cancel = nullptr);
  void stop();  // ends the stream: next() returns what is queued, then nullopt; callable from any thread
  int64_t decoded() const { return decoded_.load(); }
  int64_t dropped() const { return dropped_.load(); }

  struct Reader;  // the decoder (libav_source.h) and the network deadline

 private:
  void run();
  void push(LiveFrame frame);

  LiveStreamOptions opt_;
  std::unique_ptr<Reader> reader_;
  int width_ = 0, height_ = 0;
  double fps_ = 25;
  std::string description_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LiveFrame> queue_;
  bool ended_ = false;
  std::exception_ptr error_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> decoded_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace segmux::pipeline
