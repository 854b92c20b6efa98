#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "pipeline/backends/ort_backend.h"
#include "verify/video_parity.h"

using namespace segmux::pipeline;

// Issue 4's end-to-end bar on the fixture video: compiled candidates + the C++ control plane against
// the official predictor's outputs (ids, probs, masks IoU >= 0.99 or <= 16 px).
TEST(VideoParity, FixtureVideoMatchesTheOfficialPredictor) {
  VideoParityOptions opt;
  opt.fixture_dir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  opt.cache_dir = ::testing::TempDir() + "/segmux-video-parity-cache";
  std::ostringstream log;
  VideoParityReport rep = run_video_parity(opt, log);
  std::cout << log.str();
  EXPECT_EQ(rep.frames_compared, 17);
  EXPECT_EQ(rep.id_mismatches, 0);
  EXPECT_EQ(rep.prob_mismatches, 0);
  EXPECT_EQ(rep.mask_misses, 0);
  EXPECT_TRUE(rep.passed());
}

// Issue 10's second engine: the same C++ predictor and backend glue with every candidate run by ONNX
// Runtime on the exported ONNX files passes the same bar with the same tolerances.
TEST(VideoParity, FixtureVideoMatchesOnOnnxRuntime) {
  std::string why;
  if (!engine_available("ort", &why)) GTEST_SKIP() << why;
  VideoParityOptions opt;
  opt.fixture_dir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  opt.cache_dir = ::testing::TempDir() + "/segmux-video-parity-cache";
  opt.engine = "ort";
  std::ostringstream log;
  VideoParityReport rep = run_video_parity(opt, log);
  std::cout << log.str();
  EXPECT_NE(log.str().find("(engine ort)"), std::string::npos);
  EXPECT_EQ(rep.frames_compared, 17);
  EXPECT_EQ(rep.id_mismatches, 0);
  EXPECT_EQ(rep.prob_mismatches, 0);
  EXPECT_EQ(rep.mask_misses, 0);
  EXPECT_TRUE(rep.passed());
}
