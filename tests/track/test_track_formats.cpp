// `segmux track --format ...` end to end on the fixture video, read back by `segmux eval`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/cli_suite.h"
#include "common/run_command.h"
#include "common/tiny_fixture.h"

namespace fs = std::filesystem;

namespace {

class TrackFormats : public segmux::test::CliSuite {
 protected:
  static segmux::test::SplitResult track(const std::string& out, const std::string& extra) {
    return segmux("track " + segmux::test::tiny_fixture_dir() + "/video/frames --prompt shape " +
                  segmux::test::tiny_model_args(tmp("cache")) + " --out " + out + " --quiet --overlay none " + extra);
  }
};

TEST_F(TrackFormats, WritesEveryFormatAndEvalReadsThemBack) {
  const std::string out = tmp("run");
  auto r = track(out, "--direction forward --max-frames 5 --format ytvis,coco --format cvat --format labelstudio");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"tracks.json", "ytvis_results.json", "coco_results.json", "cvat_annotations.xml",
                        "labelstudio_tasks.json", "review_frames.json"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  // The YTVIS results hold the run's masks: against the run itself J&F is 1; so are the mask PNGs read
  // as DAVIS labels (value = obj_id + 1, paired by best J).
  for (const std::string& pred : {out + "/ytvis_results.json", out + "/masks"}) {
    r = segmux("eval " + pred + " " + out + " --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_DOUBLE_EQ(j["J&F-Mean"].get<double>(), 1.0) << pred;
    EXPECT_EQ(j["frames"], 5);
    EXPECT_GT(j["objects"].size(), 0u);
  }
  // Printed by name.
  r = segmux("eval " + out + "/ytvis_results.json " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("J&F-Mean  1.0000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F-Mean"), std::string::npos) << r.out;
}

TEST_F(TrackFormats, UnknownFormatIsAUsageErrorBeforeAnyOutput) {
  const std::string out = tmp("bad");
  auto r = track(out, "--format ytvis,mots");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown output format 'mots'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  r = segmux("eval " + tmp("missing") + " " + tmp("missing2"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

TEST_F(TrackFormats, SegmentWritesCocoResults) {
  const std::string img_dir = tmp("coco_images");
  fs::create_directories(img_dir);
  fs::copy_file(segmux::test::tiny_fixture_dir() + "/video/frames/00003.png", img_dir + "/000000397133.png");
  const std::string out = tmp("segment");
  auto r = segmux("segment " + img_dir + "/000000397133.png --prompt shape " +
                  segmux::test::tiny_model_args(tmp("cache")) + " --out " + out + " --quiet --format coco");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json res = nlohmann::json::parse(segmux::test::read_text(out + "/coco_results.json"));
  const nlohmann::json doc = nlohmann::json::parse(segmux::test::read_text(out + "/000000397133.json"));
  size_t visible = 0;
  for (const auto& o : doc["objects"]) visible += o["area"].get<int64_t>() > 0;
  ASSERT_EQ(res.size(), visible);
  for (const auto& e : res) EXPECT_EQ(e["image_id"], 397133);
  EXPECT_EQ(
      segmux("segment " + img_dir + "/000000397133.png --prompt shape --demo --out " + out + " --format ytvis").code,
      2);  // video results are for videos
}

}  // namespace
