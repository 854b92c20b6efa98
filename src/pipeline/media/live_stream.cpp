#include "pipeline/media/live_stream.h"

extern "C" {
#include <libavdevice/avdevice.h>
}
#include <fcntl.h>
#include <unistd.h>

#include <mutex>

#include "core/error.h"
#include "pipeline/media/libav_source.h"

namespace segmux::pipeline {

using namespace media_detail;

namespace {

void register_libav_inputs() {
  static std::once_flag once;
  std::call_once(once, [] {
    avdevice_register_all();
    avformat_network_init();
  });
}

// The libavdevice video input called `name` (v4l2, lavfi, x11grab, ...), or nullptr.
const AVInputFormat* video_device(const std::string& name) {
  register_libav_inputs();
  for (const AVInputFormat* f = av_input_video_device_next(nullptr); f; f = av_input_video_device_next(f))
    if (name == f->name) return f;
  return nullptr;
}

std::string device_prefix(const std::string& input) {
  const size_t colon = input.find(':');
  if (colon == std::string::npos || colon < 2 || input.find("://") != std::string::npos) return "";
  return input.substr(0, colon);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LivePolicy parse_live_policy(const std::string& name) {
  if (name == "drop-oldest") return LivePolicy::drop_oldest;
  if (name == "drop-newest") return LivePolicy::drop_newest;
  if (name == "block") return LivePolicy::block;
  fail("unknown live policy '", name, "' (drop-oldest, drop-newest or block)");
}

const char* live_policy_name(LivePolicy policy) {
  switch (policy) {
    case LivePolicy::drop_oldest:
      return "drop-oldest";
    case LivePolicy::drop_newest:
      return "drop-newest";
    case LivePolicy::block:
      return "block";
  }
  return "";
}

bool is_live_input(const std::string& input) {
  if (input == "-" || input.find("://") != std::string::npos) return true;
  const std::string prefix = device_prefix(input);
  return !prefix.empty() && video_device(prefix) != nullptr;
}

// The decoder and what the interrupt callback reads.
struct LiveStream::Reader {
  std::unique_ptr<AvSource> src;
  // Standard input is read non-blocking (libav then polls it, checking the interrupt callback every
  // millisecond), so stop() ends a wait on a pipe that stays open; its flags are restored at the end.
  int stdin_flags = -1;
  std::atomic<int64_t> deadline_ns{0};  // 0: no deadline (pipes may pause as long as they like)
  std::atomic<bool> timed_out{false};
  const std::atomic<bool>* stop = nullptr;
};

namespace {
int interrupt_cb(void* opaque) {
  auto* r = static_cast<LiveStream::Reader*>(opaque);
  if (r->stop->load()) return 1;
  const int64_t deadline = r->deadline_ns.load();
  if (deadline != 0 && now_ns() > deadline) {
    r->timed_out = true;
    return 1;
  }
  return 0;
}
}  // namespace

LiveStream::LiveStream(const LiveStreamOptions& opt) : opt_(opt), reader_(std::make_unique<Reader>()) {
  SEGMUX_CHECK(opt.queue_frames >= 1 && opt.queue_frames <= 1024, "a live queue of ", opt.queue_frames,
               " frames (1..1024)");
  SEGMUX_CHECK(opt.timeout_s > 0, "a live timeout of ", opt.timeout_s, " s must be positive");
  register_libav_inputs();
  reader_->stop = &stop_;
  AvInput in;
  std::string url = opt.input;
  const bool network = opt.input.find("://") != std::string::npos;
  if (opt.input == "-") {
    url = "pipe:0";
    if (!opt.raw.empty()) {
      const size_t colon = opt.raw.find(':');
      SEGMUX_CHECK(colon != std::string::npos && colon > 0, "--live-raw '", opt.raw,
                   "' must be PIXFMT:WxH, e.g. rgb24:640x480");
      SEGMUX_CHECK(opt.raw_fps > 0, "a raw frame rate must be positive, got ", opt.raw_fps);
      in.format = av_find_input_format("rawvideo");
      in.options = {{"pixel_format", opt.raw.substr(0, colon)},
                    {"video_size", opt.raw.substr(colon + 1)},
                    {"framerate", std::to_string(opt.raw_fps)}};
    }
  } else if (!network) {
    const std::string prefix = device_prefix(opt.input);
    in.format = prefix.empty() ? nullptr : video_device(prefix);
    SEGMUX_CHECK(in.format != nullptr, "'", opt.input,
                 "' is not a live input: give '-' (standard input), a URL (rtsp://, http://, ...) or DEVICE:NAME "
                 "with a capture device libavdevice has (e.g. v4l2:/dev/video0)");
    url = opt.input.substr(prefix.size() + 1);
  }
  SEGMUX_CHECK(opt.raw.empty() || opt.input == "-", "--live-raw is for raw frames on standard input ('-')");
  if (network) {
    in.options.push_back({"rw_timeout", std::to_string(int64_t(opt.timeout_s * 1e6))});
    reader_->deadline_ns = now_ns() + int64_t(opt.timeout_s * 1e9);
  }
  in.interrupt = {interrupt_cb, reader_.get()};
  if (opt.input == "-" && !isatty(0) && (reader_->stdin_flags = fcntl(0, F_GETFL)) >= 0)
    fcntl(0, F_SETFL, reader_->stdin_flags | O_NONBLOCK);
  try {
    reader_->src = std::make_unique<AvSource>(url, in);
  } catch (const Error& e) {
    if (reader_->stdin_flags >= 0) fcntl(0, F_SETFL, reader_->stdin_flags);
    SEGMUX_CHECK(!reader_->timed_out, "live input '", opt.input, "': nothing within ", opt.timeout_s, " s");
    throw;
  }
  width_ = reader_->src->width();
  height_ = reader_->src->height();
  fps_ = reader_->src->fps();
  description_ = opt.input + ": live " + std::to_string(width_) + "x" + std::to_string(height_) + " (" +
                 reader_->src->codec_name() + "), queue " + std::to_string(opt.queue_frames) + " frames, " +
                 live_policy_name(opt.policy);
  thread_ = std::thread([this] { run(); });
}

LiveStream::~LiveStream() {
  stop();
  if (thread_.joinable()) thread_.join();
  if (reader_->stdin_flags >= 0) fcntl(0, F_SETFL, reader_->stdin_flags);
}

void LiveStream::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void LiveStream::run() {
  try {
    AvSource& src = *reader_->src;
    const AVRational tb = src.time_base();
    RgbImage img;
    int64_t pts = 0;
    while (!stop_ && src.next(&img, &pts)) {
      SEGMUX_CHECK(img.width == width_ && img.height == height_, "live input '", opt_.input,
                   "': the frame size changed from ", width_, "x", height_, " to ", img.width, "x", img.height);
      if (reader_->deadline_ns.load() != 0) reader_->deadline_ns = now_ns() + int64_t(opt_.timeout_s * 1e9);
      LiveFrame f;
      f.image = std::move(img);
      f.number = decoded_++;
      if (pts != AV_NOPTS_VALUE && tb.num > 0 && tb.den > 0) f.time_s = double(pts) * tb.num / tb.den;
      f.arrived = std::chrono::steady_clock::now();
      push(std::move(f));
    }
    SEGMUX_CHECK(!reader_->timed_out, "live input '", opt_.input, "': no data for ", opt_.timeout_s, " s");
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
  }
  cv_.notify_all();
}

void LiveStream::push(LiveFrame frame) {
  std::unique_lock<std::mutex> lock(mu_);
  const size_t cap = size_t(opt_.queue_frames);
  if (queue_.size() >= cap) {
    switch (opt_.policy) {
      case LivePolicy::block:
        cv_.wait(lock, [&] { return queue_.size() < cap || stop_; });
        break;
      case LivePolicy::drop_oldest:
        queue_.pop_front();
        ++dropped_;
        break;
      case LivePolicy::drop_newest:
        ++dropped_;
        return;
    }
    if (stop_) return;
  }
  queue_.push_back(std::move(frame));
  lock.unlock();
  cv_.notify_all();
}

std::optional<LiveFrame> LiveStream::next(const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  while (queue_.empty() && !ended_) {
    if (cancel && cancel->load()) return std::nullopt;
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (!queue_.empty()) {
    LiveFrame f = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    cv_.notify_all();  // a blocked reader may go on
    return f;
  }
  if (error_) std::rethrow_exception(error_);
  return std::nullopt;
}

}  // namespace segmux::pipeline
