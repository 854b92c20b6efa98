// The two-bucket golden set (tests/fixtures/sam31-tiny-two-buckets, official trace): a model whose
// multiplex_count (2) is smaller than the objects one tracker state gets, so every tracker call of a
// state runs two buckets. The whole product path (compiled candidates, control plane, session API)
// against the official predictor: the video trace and the request sequence (other start frames and
// directions, a removal, a bounded propagation, a reset).
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/two_bucket_set.h"
#include "verify/video_parity.h"

using namespace segmux::pipeline;

namespace {

segmux::verify::VideoParityOptions two_bucket_options() {
  segmux::verify::VideoParityOptions opt;
  opt.fixture_dir = segmux::test::two_bucket_set_dir();
  opt.weights = segmux::test::two_bucket_weights(::testing::TempDir());
  opt.cache_dir = ::testing::TempDir() + "/segmux-two-buckets-cache";
  return opt;
}

// The most buckets any traced tracker call of the run had (from --trace-calls lines).
int most_buckets(const std::string& calls_file) {
  std::ifstream calls(calls_file);
  std::string line;
  int most = 0;
  while (std::getline(calls, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("buckets")) most = std::max(most, int(j["buckets"].size()));
  }
  return most;
}

}  // namespace

TEST(TwoBucketSet, VideoTraceMatchesTheOfficialPredictor) {
  segmux::verify::VideoParityOptions opt = two_bucket_options();
  opt.trace_calls = ::testing::TempDir() + "/segmux-two-buckets-calls.jsonl";
  std::ostringstream log;
  segmux::verify::VideoParityReport rep = segmux::verify::run_video_parity(opt, log);
  std::cout << log.str();
  EXPECT_GE(rep.frames_compared, 8);
  EXPECT_EQ(rep.id_mismatches, 0);
  EXPECT_EQ(rep.prob_mismatches, 0);
  EXPECT_EQ(rep.mask_misses, 0);
  EXPECT_TRUE(rep.passed());
  // The point of the set: tracker calls with two buckets of one state.
  EXPECT_EQ(most_buckets(opt.trace_calls), 2);
}

TEST(TwoBucketSet, RequestSequenceMatchesTheOfficialRequests) {
  std::ostringstream log;
  const segmux::verify::RequestReplayReport rep = segmux::verify::run_request_replay(two_bucket_options(), log);
  std::cout << log.str();
  std::ifstream f(segmux::test::two_bucket_set_dir() + "/video/trace.json");
  const size_t official = nlohmann::json::parse(f).at("requests").size();
  ASSERT_EQ(rep.requests.size(), official);
  ASSERT_GE(rep.requests.size(), 4u);
  int frames = 0;
  for (size_t i = 0; i < rep.requests.size(); ++i) {
    EXPECT_TRUE(rep.requests[i].matched) << "request " << i << " (" << rep.requests[i].type << ")";
    frames += rep.requests[i].frames.frames_compared;
  }
  EXPECT_GE(frames, 16);
}
