// --precision fp32|bf16 on the commands that compile a checkpoint (track, segment, serve, bench-frame,
// parity --video): bad values and misplaced uses are usage errors naming the option, and a bf16 track
// run on the fixture video stays within the bf16 tolerance stated in docs/track.md against the official
// trace (the fp32 bar, IoU >= 0.99, is CI's parity and is not loosened: bf16 does not reach it).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/cli_suite.h"
#include "common/run_command.h"
#include "common/tiny_fixture.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/masks/rle.h"

namespace fs = std::filesystem;
using segmux::pipeline::BinaryMask;
using segmux::pipeline::RleMask;

namespace {

const std::string kTiny = segmux::test::tiny_fixture_dir();

using Result = segmux::test::SplitResult;
std::string slurp(const fs::path& p) { return segmux::test::read_text(p.string()); }
class Precision : public segmux::test::CliSuite {
 protected:
  static std::string model_args() { return segmux::test::tiny_model_args(tmp("cache")); }
  static Result track(const std::string& out, const std::string& extra) {
    return segmux("track " + kTiny + "/video/frames --prompt shape " + model_args() + " --out " + out +
                  " --quiet --overlay none " + extra);
  }
  static void expect_usage_error(const Result& r, const std::string& words) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << "stderr: " << r.err;
  }
};

// IoU of object `id` in a tracks.json frame against an official mask.
double iou_with(const nlohmann::json& frame, int64_t id, const BinaryMask& want) {
  for (const auto& o : frame["objects"]) {
    if (o["id"].get<int64_t>() != id) continue;
    const RleMask rle = segmux::pipeline::coco_rle_from_string(o["mask_rle"]["counts"], o["mask_rle"]["size"][0],
                                                               o["mask_rle"]["size"][1]);
    return segmux::pipeline::mask_iou(segmux::pipeline::rle_decode(rle), want);
  }
  return 0;
}

}  // namespace

TEST_F(Precision, BadValuesAndMisplacedUsesAreUsageErrors) {
  Result r = track(tmp("bad"), "--precision fp16");
  expect_usage_error(r, "--precision");
  EXPECT_NE(r.err.find("'fp16' is not a precision: use fp32 or bf16"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp("bad")));
  expect_usage_error(track(tmp("bad"), "--precision BF16"), "'BF16' is not a precision");
  expect_usage_error(track(tmp("bad"), "--precision"), "--precision");
  expect_usage_error(track(tmp("bad"), "--precision bf16 --engine ort"), "--precision bf16 needs --engine smx");
  expect_usage_error(segmux("track " + kTiny + "/video/frames --prompt shape --demo --out " + tmp("bad") +
                            " --cache-dir " + tmp("cache") + " --precision bf16"),
                     "--precision applies to a --weights checkpoint");
  EXPECT_FALSE(fs::exists(tmp("bad")));
  expect_usage_error(segmux("segment x.png --prompt shape --demo --out " + tmp("bad") + " --precision fp64"),
                     "'fp64' is not a precision");
  expect_usage_error(
      segmux("segment x.png --prompt shape --model " + tmp("nowhere") + " --out " + tmp("bad") + " --precision bf16"),
      "--precision applies to a --weights checkpoint");
  expect_usage_error(segmux("serve --model " + tmp("nowhere") + " --precision bf16"),
                     "--precision applies to a --weights checkpoint");
  expect_usage_error(segmux("serve --model " + tmp("nowhere") + " --precision half"), "'half' is not a precision");
  expect_usage_error(segmux("bench-frame " + model_args() + " --precision int8"), "'int8' is not a precision");
  expect_usage_error(segmux("parity " + kTiny + " --precision bf16"), "--precision goes with --video");
  expect_usage_error(segmux("parity " + kTiny + " --video --model " + tmp("nowhere") + " --precision bf16"),
                     "--precision and --model exclude each other");
}

TEST_F(Precision, HelpNamesTheDefault) {
  for (const char* cmd : {"track", "segment", "serve", "bench-frame"}) {
    Result r = segmux(std::string(cmd) + " --help");
    ASSERT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("--precision"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("(default fp32)"), std::string::npos) << cmd << ": " << r.out;
  }
}

// bf16 on the fixture video with `--prompt shape` against the official predictor run the same way
// (bf16 autocast: tests/fixtures/sam31-tiny-bf16/orig-bf16, tools/fixtures/gen_bf16_trace.py; the
// figures of every frame are in docs/bf16.md): the detection frame has the official bf16 run's ids
// and every mask IoU >= 0.9 (measured 0.948). The official fp32 trace is not the reference for bf16:
// the official code itself keeps 1 of its 3 objects there in bf16. Later frames are not bounded: on
// this tiny model bf16 rounding (official or ours) changes the tracking within a few frames, which is
// why fp32 stays the default. fp32 explicitly given equals the default, and bf16 output differs from
// it (the option reaches the compiler).
TEST_F(Precision, Bf16TrackMatchesTheOfficialBf16RunOnTheDetectionFrame) {
  const fs::path trace_path = fs::path(SEGMUX_SOURCE_DIR) / "tests/fixtures/sam31-tiny-bf16/orig-bf16/video/trace.json";
  if (!fs::exists(kTiny + "/video/frames")) GTEST_SKIP() << "no fixture at " << kTiny;
  // Without AVX512_BF16 the attention of bf16 nodes stays f32 (kernels/cpu/attention.cpp): another
  // rounding than the official run's, which this test does not describe.
  const char* isa = std::getenv("SEGMUX_ISA");
  if (!__builtin_cpu_supports("avx512bf16") || (isa && std::string(isa) != "avx512"))
    GTEST_SKIP() << "no AVX512_BF16 attention here";
#ifdef __SANITIZE_ADDRESS__
  // The sanitizer build (-O1) does not contract multiplies and adds into FMAs where the release build
  // does (across the f32 code around the bf16 kernels): another rounding again. On 2026-12-06 its bf16
  // run kept fp32's ids {0, 1, 2} on the detection frame, with this session's code and with the code
  // before it alike; the release build keeps the official bf16 run's {2}.
  GTEST_SKIP() << "sanitizer build: another rounding than the release build's";
#endif
  const nlohmann::json trace = nlohmann::json::parse(slurp(trace_path));
  const nlohmann::json& requests = trace["requests"];
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_EQ(requests[0]["text"], "shape");
  const int prompted = requests[0]["frame_index"].get<int>();
  std::map<int, nlohmann::json> official;  // the propagation's output of each frame
  for (const auto& f : requests[1]["yields"]) official[f["frame_index"].get<int>()] = f;

  Result r = track(tmp("bf16"), "--precision bf16");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json got = nlohmann::json::parse(slurp(fs::path(tmp("bf16")) / "tracks.json"));
  ASSERT_EQ(got["frames"].size(), official.size());
  int checked = 0;
  for (const auto& f : got["frames"]) {
    const int index = f["frame_index"];
    ASSERT_TRUE(official.count(index)) << "frame " << index;
    if (index != prompted) continue;
    const nlohmann::json& ref = official[index];
    std::vector<int64_t> ids;
    for (const auto& o : f["objects"]) ids.push_back(o["id"]);
    EXPECT_EQ(ids, ref["obj_ids"].get<std::vector<int64_t>>()) << "frame " << index;
    for (size_t k = 0; k < ref["obj_ids"].size(); ++k, ++checked) {
      const RleMask rle{ref["masks_rle"][k]["size"][0], ref["masks_rle"][k]["size"][1], ref["masks_rle"][k]["counts"]};
      const double iou = iou_with(f, ref["obj_ids"][k], segmux::pipeline::rle_decode(rle));
      EXPECT_GE(iou, 0.9) << "frame " << index << " object " << ref["obj_ids"][k];
    }
  }
  ASSERT_GT(checked, 0);

  ASSERT_EQ(track(tmp("fp32"), "--precision fp32").code, 0);
  ASSERT_EQ(track(tmp("default"), "").code, 0);
  const std::string fp32 = slurp(fs::path(tmp("fp32")) / "tracks.json");
  EXPECT_EQ(fp32, slurp(fs::path(tmp("default")) / "tracks.json")) << "fp32 is the default";
  EXPECT_NE(fp32, slurp(fs::path(tmp("bf16")) / "tracks.json")) << "bf16 compiled like fp32";
}
