// One command line across commands: every output option answers to -o, --out and --output; a mistyped
// command or option gets a suggestion; a missing checkpoint is named as such (not as its vocabulary).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/run_command.h"
#include "models/sam31/config.h"
#include "pipeline/predictor/control_config.h"
#include "verify/sam31/fixture_config.h"

namespace {

using segmux::test::run_segmux;

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(CliConsistency, MistypedCommandAndOptionGetSuggestions) {
  auto r = run_segmux("trak video.mp4");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "unknown command 'trak' (did you mean 'track'?)");
  r = run_segmux("track video.mp4 --promt dog --demo --out /nonexistent-dir/x");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "did you mean '--prompt' for '--promt'?");
  // Nothing close: no guess.
  r = run_segmux("xyzzy");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << r.out;
  r = run_segmux("segmnet a.png");
  EXPECT_HAS(r.out, "(did you mean 'segment'?)");
}

TEST(CliConsistency, EveryOutputOptionTakesOutAndOutput) {
  for (const std::string command : {"track", "segment", "batch", "compile", "deploy", "export-onnx", "extract",
                                    "make-checkpoint", "slim", "run", "tokenize", "fixture-config"}) {
    const auto r = run_segmux(command + " --help", "2>&1");
    EXPECT_EQ(r.code, 0) << command << ": " << r.out;
    EXPECT_TRUE(r.out.find("-o,--out,--output") != std::string::npos ||
                r.out.find("-o,--output,--out") != std::string::npos)
        << command << ": " << r.out;
  }
}

// `segmux fixture-config` turns a fixture's config.json into the flat model config the library reads (and,
// with --control, its control-plane settings), equal to what verification reads from the fixture.
TEST(CliConsistency, FixtureConfigWritesTheFlatForms) {
  const std::string fixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  if (!std::filesystem::exists(fixture + "/config.json")) GTEST_SKIP() << "no fixture at " << fixture;
  const std::string out = ::testing::TempDir() + "/segmux_fixture_config_" + std::to_string(::getpid());
  auto r = run_segmux("fixture-config " + fixture + "/config.json -o " + out + ".json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(segmux::sam31::config_to_json(segmux::sam31::load_config(out + ".json")),
            segmux::sam31::config_to_json(segmux::verify::load_fixture_config(fixture + "/config.json")));
  r = run_segmux("fixture-config --control " + fixture + "/video/trace.json -o " + out + ".control.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(segmux::pipeline::control_config_to_json(segmux::pipeline::load_control_config(out + ".control.json")),
            segmux::pipeline::control_config_to_json(
                segmux::verify::load_fixture_control_config(fixture + "/video/trace.json")));
  r = run_segmux("fixture-config " + out + ".json -o " + out + ".again.json");  // already flat
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "not a fixture config");
  std::filesystem::remove(out + ".json");
  std::filesystem::remove(out + ".control.json");
}

TEST(CliConsistency, MissingCheckpointIsNamed) {
  const std::string frames = std::string(SEGMUX_FIXTURES) + "/sam31-tiny/video/frames";
  if (!std::filesystem::is_directory(frames)) GTEST_SKIP() << "no fixture video at " << frames;
  const auto r = run_segmux("track " + frames + " --prompt dog --weights /nonexistent/sam3.1.pt --out " +
                            ::testing::TempDir() + "/never-written");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "checkpoint '/nonexistent/sam3.1.pt' does not exist");
  EXPECT_EQ(r.out.find("vocab"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// `segment` takes single images: a video (or an animated GIF) is refused, not cut to its first frame.
TEST(CliConsistency, SegmentRefusesAVideo) {
  const std::string dir = ::testing::TempDir() + "/segmux_segment_video_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const std::string name : {"clip.mp4", "clip.gif"}) {
    auto r = run_segmux("sample-video --frames 3 --size 64x48 " + dir + "/" + name);
    ASSERT_EQ(r.code, 0) << r.out;
    r = run_segmux("segment " + dir + "/" + name + " --prompt shape --demo --out " + dir + "/out");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_HAS(r.out, "holds more than one frame");
    EXPECT_FALSE(std::filesystem::exists(dir + "/out")) << name;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
