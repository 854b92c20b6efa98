// tracks.json stays valid JSON in UTF-8 whatever the source's file name holds (issue 22: a Latin-1
// name ended the run with a raw "type_error 316").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "pipeline/outputs/outputs.h"

using namespace segmux;
using namespace segmux::pipeline;
namespace fs = std::filesystem;

TEST(OutputsUtf8, ALatin1SourceNameIsWrittenAsReplacementCharacters) {
  const std::string dir = ::testing::TempDir() + "/track_out_latin1";
  fs::remove_all(dir);
  OutputOptions opt;
  opt.write_masks = false;
  opt.source = "/videos/caf\xe9.mp4";  // Latin-1 e-acute: not UTF-8
  opt.prompt = "dog";
  {
    TrackWriter w(dir, 4, 4, opt);
    RgbImage frame;
    frame.width = frame.height = 4;
    frame.pixels.assign(48, 0);
    FrameOutput out;
    out.frame_index = 0;
    w.add(frame, out);
    w.finish();
  }
  std::ifstream in(dir + "/tracks.json", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(text);  // throws on invalid UTF-8
  EXPECT_EQ(j["source"], "/videos/caf\xef\xbf\xbd.mp4");
  EXPECT_EQ(j["frames"].size(), 1u);
  fs::remove_all(dir);
}
