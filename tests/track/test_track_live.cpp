// `segmux track -` end to end: the fixture video's frames piped in as raw RGB, tracked as they arrive.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_suite.h"
#include "common/run_command.h"
#include "common/tiny_fixture.h"
#include "pipeline/media/video_io.h"

namespace fs = std::filesystem;

namespace {

class TrackLive : public segmux::test::CliSuite {
 protected:
  static void SetUpTestSuite() {
    CliSuite::SetUpTestSuite();
    // The fixture frames as one raw rgb24 stream.
    auto video = segmux::pipeline::open_video(segmux::test::tiny_fixture_dir() + "/video/frames");
    frames_ = video->num_frames();
    width_ = video->width();
    height_ = video->height();
    std::ofstream raw(tmp("frames.rgb"), std::ios::binary);
    for (int f = 0; f < frames_; ++f) {
      const auto img = video->frame(f);
      raw.write(reinterpret_cast<const char*>(img.pixels.data()), std::streamsize(img.pixels.size()));
    }
  }
  static std::string raw_option() {
    return "--live-raw rgb24:" + std::to_string(width_) + "x" + std::to_string(height_) + " --live-fps 10";
  }
  // `cat frames.rgb | segmux track - ...`
  static segmux::test::SplitResult live(const std::string& out, const std::string& extra) {
    return segmux::test::run_segmux_split("track - --prompt shape " + segmux::test::tiny_model_args(tmp("cache")) +
                                              " --out " + out + " --quiet --overlay none " + raw_option() + " " + extra,
                                          tmp("stderr.txt"), "cat " + tmp("frames.rgb") + " |");
  }
  static nlohmann::json read_json(const std::string& path) {
    return nlohmann::json::parse(segmux::test::read_text(path), nullptr, false);
  }
  static inline int frames_ = 0, width_ = 0, height_ = 0;
};

TEST_F(TrackLive, PipedFramesAreTrackedWithLatencyPerFrame) {
  const std::string out = tmp("live");
  auto r = live(out, "--live-policy block --format ytvis");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json stats = read_json(out + "/live_stats.json");
  EXPECT_EQ(stats["frames_tracked"], frames_);
  EXPECT_EQ(stats["frames_decoded"], frames_);
  EXPECT_EQ(stats["frames_dropped"], 0);  // block: the pipe waits for the model
  EXPECT_EQ(stats["policy"], "block");
  EXPECT_EQ(stats["stopped_by"], "end of stream");
  EXPECT_GE(stats["latency_s"]["max"].get<double>(), stats["latency_s"]["p50"].get<double>());
  const nlohmann::json tracks = read_json(out + "/tracks.json");
  ASSERT_EQ(tracks["frames"].size(), size_t(frames_));
  EXPECT_NEAR(tracks["frames"][3]["time_s"].get<double>(), 0.3, 1e-6);  // --live-fps 10
  std::ifstream lines(out + "/live_frames.jsonl");
  std::string line;
  int n = 0;
  for (; std::getline(lines, line); ++n) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["frame_index"], n);
    EXPECT_EQ(j["stream_frame"], n);
    EXPECT_GE(j["latency_s"].get<double>(), j["queue_wait_s"].get<double>());
  }
  EXPECT_EQ(n, frames_);
  EXPECT_TRUE(fs::exists(out + "/ytvis_results.json"));
  EXPECT_EQ(fs::directory_iterator(out + "/masks") == fs::directory_iterator(), false);
}

TEST_F(TrackLive, MaxFramesEndsTheRunAndKeepsItsOutputs) {
  const std::string out = tmp("live3");
  auto r = live(out, "--live-policy block --max-frames 3");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json stats = read_json(out + "/live_stats.json");
  EXPECT_EQ(stats["frames_tracked"], 3);
  EXPECT_EQ(stats["stopped_by"], "max-frames");
  EXPECT_EQ(read_json(out + "/tracks.json")["frames"].size(), 3u);
}

TEST_F(TrackLive, CtrlCEndsTheRunAndKeepsItsOutputs) {
  // The frames go into a FIFO whose writer stays open: the stream never ends by itself. Once the first
  // mask is staged, SIGINT (through `timeout`, which bounds the run and passes the signal on) ends it.
  const std::string out = tmp("live_int"), fifo = tmp("fifo");
  const std::string seg = std::string(SEGMUX_BINARY_DIR) + "/segmux track - --prompt shape " +
                          segmux::test::tiny_model_args(tmp("cache")) + " --out " + out +
                          " --quiet --overlay none --live-policy block " + raw_option();
  const std::string script = "rm -f " + fifo + "; mkfifo " + fifo + "; timeout 60 " + seg + " < " + fifo + " 2>" +
                             tmp("int_err.txt") + " & pid=$!; exec 3>" + fifo + "; cat " + tmp("frames.rgb") +
                             " >&3; for i in $(seq 300); do ls " + out +
                             "/.partial-*/masks/00000.png >/dev/null 2>&1 && break; sleep 0.1; done; kill -INT $pid; "
                             "wait $pid; rc=$?; exec 3>&-; echo rc=$rc";
  const auto r = segmux::test::run_shell(script);
  EXPECT_NE(r.out.find("rc=0"), std::string::npos) << r.out << segmux::test::read_text(tmp("int_err.txt"));
  const nlohmann::json stats = read_json(out + "/live_stats.json");
  ASSERT_TRUE(stats.is_object()) << segmux::test::read_text(tmp("int_err.txt"));
  EXPECT_EQ(stats["stopped_by"], "signal");
  EXPECT_GE(stats["frames_tracked"].get<int>(), 1);
  EXPECT_EQ(read_json(out + "/tracks.json")["frames"].size(), stats["frames_tracked"].get<size_t>());
}

// A network stream on loopback: a synthetic video served over HTTP by Python's http.server on 127.0.0.1
// (this test's own process, stopped by its pid), read as a plain URL and through an HLS playlist of that
// segment (Matroska: segmux writes no MPEG-TS; libav's HLS demuxer probes the segment's format); every
// frame is tracked as it arrives, and the run ends with the stream.
TEST_F(TrackLive, HttpAndHlsStreamsOnLoopbackAreTracked) {
  const std::string dir = tmp("www");
  fs::create_directories(dir);
  ASSERT_EQ(segmux::test::run_segmux("sample-video " + dir + "/stream.mkv --frames 8 --size 64x48").code, 0);
  std::ofstream(dir + "/stream.m3u8") << "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n"
                                         "#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\nstream.mkv\n#EXT-X-ENDLIST\n";
  const std::string seg = std::string(SEGMUX_BINARY_DIR) + "/segmux track http://127.0.0.1:$port/";
  const std::string args = " --prompt shape " + segmux::test::tiny_model_args(tmp("cache")) +
                           " --quiet --overlay none --live-policy block --live-timeout 30";
  const std::string script =
      "cd " + dir +
      " && { timeout 120 python3 -u -m http.server 0 --bind 127.0.0.1 >server.log 2>&1 & pid=$!; }; "
      "for i in $(seq 100); do port=$(sed -n 's/.* port \\([0-9]*\\) .*/\\1/p' server.log); "
      "[ -n \"$port\" ] && break; sleep 0.1; done; " +
      seg + "stream.mkv" + args + " --out " + tmp("http_out") + " 2>" + tmp("http_err.txt") + "; rc1=$?; " + seg +
      "stream.m3u8" + args + " --out " + tmp("hls_out") + " 2>" + tmp("hls_err.txt") +
      "; rc2=$?; kill $pid; wait $pid; echo rc=$rc1,$rc2";
  const auto r = segmux::test::run_shell(script);
  EXPECT_NE(r.out.find("rc=0,0"), std::string::npos)
      << r.out << segmux::test::read_text(tmp("http_err.txt")) << segmux::test::read_text(tmp("hls_err.txt"));
  for (const std::string& out : {tmp("http_out"), tmp("hls_out")}) {
    const nlohmann::json stats = read_json(out + "/live_stats.json");
    ASSERT_TRUE(stats.is_object()) << out;
    EXPECT_EQ(stats["frames_tracked"], 8) << out;
    EXPECT_EQ(stats["frames_dropped"], 0) << out;
    EXPECT_EQ(stats["stopped_by"], "end of stream") << out;
    EXPECT_EQ(read_json(out + "/tracks.json")["frames"].size(), 8u) << out;
  }
}

TEST_F(TrackLive, LiveRefusesWhatNeedsAVideoFile) {
  const std::string out = tmp("bad");
  for (const std::string extra : {"--start 2", "--point 10,10 --obj-id 1", "--direction backward"}) {
    auto r = live(out, extra);
    EXPECT_EQ(r.code, 2) << extra << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << extra;
  }
  // A raw size that does not match the bytes: the stream ends mid-frame, no frame is tracked.
  auto r = segmux::test::run_segmux_split("track - --prompt shape " + segmux::test::tiny_model_args(tmp("cache")) +
                                              " --out " + out + " --quiet --live-raw rgb24:100000x100000",
                                          tmp("stderr.txt"), "cat " + tmp("frames.rgb") + " |");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
