#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "verify/video_parity.h"

using namespace segmux::pipeline;

// The bf16 study's references (tests/fixtures/sam31-tiny-bf16, docs/bf16.md) come from one generator
// (tools/fixtures/gen_bf16_trace.py) run in fp32 and under bf16 autocast. Its fp32 traces must be the
// official predictor exactly as the other fixtures have it: our fp32 replays them within CI's parity
// bar (the fixture video, reversed, and another start frame with both directions), so the
// bf16 traces beside them differ from fp32 by the precision only.
TEST(Bf16StudyTraces, Fp32TracesMatchOurFp32Predictor) {
  for (const char* name : {"orig-fp32", "reverse-fp32", "orig-start8-fp32"}) {
    SCOPED_TRACE(name);
    segmux::verify::VideoParityOptions opt;
    opt.fixture_dir = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-bf16/" + name;
    opt.cache_dir = ::testing::TempDir() + "/segmux-video-parity-cache";
    std::ostringstream log;
    const segmux::verify::RequestReplayReport rep = segmux::verify::run_request_replay(opt, log);
    std::cout << log.str();
    ASSERT_EQ(rep.requests.size(), 2u);
    for (const auto& q : rep.requests) {
      EXPECT_TRUE(q.matched) << q.type;
      EXPECT_GT(q.frames.frames_compared, 0) << q.type;
    }
  }
}
