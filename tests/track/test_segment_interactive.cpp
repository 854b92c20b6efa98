// `segmux segment --point ...` (the SAM-1-style interactive predictor behind the segment command): the
// official candidates and scores of tests/fixtures/sam31-tiny-sam1 in STEM.json and STEM.mask<K>.png, the
// low-res logits fed back with --mask-input, and bad input refused with a message, leaving nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/run_command.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace {

const std::string kSet = std::string(SEGMUX_SOURCE_DIR) + "/tests/fixtures/sam31-tiny-sam1";

class SegmentInteractive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSet + "/cases.json")) GTEST_SKIP() << "sam31-tiny-sam1 fixtures not found";
    tmp_ = fs::path(::testing::TempDir()) / ("segmux_segment_interactive_" + std::to_string(::getpid()));
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  segmux::test::SplitResult run(const std::string& args) {
    return segmux::test::run_segmux_split("segment " + kSet + "/images/frame00.png " + args + " --weights " + kSet +
                                              "/weights.safetensors --config " + kSet + "/config.json --vocab " + kSet +
                                              "/tokenizer/bpe_simple_vocab_16e6.txt.gz --cache-dir " +
                                              (tmp_ / "cache").string() + " -q >/dev/null",
                                          (tmp_ / "stderr.txt").string());
  }
  fs::path tmp_;
};

}  // namespace

TEST_F(SegmentInteractive, CandidatesAndFedBackLogitsEqualTheOfficial) {
  const fs::path out = tmp_ / "click", low = tmp_ / "low.npy";
  auto r = run("--point 163,79 --multimask --out " + out.string() + " --logits-out " + low.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(segmux::test::read_text(out / "frame00.json"));
  const segmux::TensorFile ref = segmux::read_safetensors(kSet + "/cases/frame00_point_multimask.safetensors");
  ASSERT_EQ(j["candidates"].size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(j["candidates"][k]["score"].get<double>(), ref.at("out.scores").data<float>()[k], 2e-6);
    int64_t area = 0;
    const auto& m = ref.at("out.masks");
    for (int64_t i = 0; i < m.dim(1) * m.dim(2); ++i) area += m.data<uint8_t>()[k * m.dim(1) * m.dim(2) + i];
    EXPECT_EQ(j["candidates"][k]["area"].get<int64_t>(), area) << k;
    EXPECT_TRUE(fs::exists(out / ("frame00.mask" + std::to_string(k) + ".png")));
  }
  EXPECT_EQ(j["best"], 2);
  const fs::path out2 = tmp_ / "refined";
  r = run("--point 163,79 --point 150,60 --mask-input " + low.string() + " --mask-input-index 2 --out " +
          out2.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j2 = nlohmann::json::parse(segmux::test::read_text(out2 / "frame00.json"));
  const segmux::TensorFile ref2 = segmux::read_safetensors(kSet + "/cases/frame00_refine_mask_input.safetensors");
  ASSERT_EQ(j2["candidates"].size(), 1u);
  EXPECT_NEAR(j2["candidates"][0]["score"].get<double>(), ref2.at("out.scores").data<float>()[0], 2e-6);
}

TEST_F(SegmentInteractive, BadInputIsRefusedAndLeavesNothing) {
  const fs::path out = tmp_ / "bad";
  struct Case {
    std::string args, message;
  };
  const fs::path wrong = tmp_ / "wrong.npy";
  {  // a mask input of the wrong size: 1 x 7 x 7 float32
    std::string npy("\x93NUMPY\x01\x00", 8);
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 7, 7), }";
    header.resize(128 - 10 - 1, ' ');
    header += '\n';
    npy += char(header.size() & 0xff);
    npy += char(header.size() >> 8);
    npy += header + std::string(49 * 4, '\0');
    std::FILE* f = std::fopen(wrong.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(npy.data(), 1, npy.size(), f);
    std::fclose(f);
  }
  for (const Case& c : std::vector<Case>{
           {"--point 400,10", "outside the 320x240 image"},
           {"--point 10,10 --box 10,10,500,20", "outside the 320x240 image"},
           {"--point 10,10 --box 10,10,20,20 --box 30,30,5,5", "one --box"},
           {"--interactive --box 10,10,20,20:neg", "cannot be negative"},
           {"--point 10,10 --prompt shape", "--prompt is for concept segmentation"},
           {"--point 10,10 --threshold 0.3", "--threshold is for concept segmentation"},
           {"--point 10,10 --mask-input " + wrong.string(), "mask_input has shape"},
           {"--point 10,10 --mask-input-index 1", "--mask-input-index without --mask-input"},
           {"--interactive", "no prompt"},
       }) {
    auto r = run(c.args + " --out " + out.string());
    EXPECT_NE(r.code, 0) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}
