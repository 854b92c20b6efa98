// The manifest of `segmux batch`: path lines and JSON lines, ids, and every mistake named by its line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "pipeline/batch/manifest.h"

namespace fs = std::filesystem;
using segmux::pipeline::batch_id_from_path;
using segmux::pipeline::parse_manifest;
using segmux::pipeline::valid_batch_id;

namespace {

// The message of the error parsing `text` throws ("" when it parses).
std::string error_of(const std::string& text) {
  try {
    parse_manifest(text, "m.txt", "/data");
  } catch (const segmux::Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, const std::string& words) {
  const std::string e = error_of(text);
  EXPECT_NE(e.find(words), std::string::npos) << "manifest:\n" << text << "\nerror: " << e;
}

}  // namespace

TEST(BatchManifest, PathLinesCommentsAndRelativePaths) {
  auto items = parse_manifest("# dataset\n\nclips/a.mp4\n  /abs/b c.gif  \r\n", "m.txt", "/data");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].id, "a");
  EXPECT_EQ(items[0].path, "/data/clips/a.mp4");
  EXPECT_EQ(items[0].line, 3);
  EXPECT_EQ(items[1].id, "b_c");  // a space cannot name a folder on every file system
  EXPECT_EQ(items[1].path, "/abs/b c.gif");
  EXPECT_TRUE(items[0].prompts.empty());
}

TEST(BatchManifest, JsonLinesCarryPerVideoOptions) {
  auto items = parse_manifest(
      R"({"id": "v1", "path": "x.mp4", "prompts": ["dog", "cat"], "start": 3, "max_frames": 5, "direction": "both", "fps": 12.5}
{"path": "y.gif", "prompt": "shape"}
z.mp4
)",
      "m.txt", "/data");
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].id, "v1");
  EXPECT_EQ(items[0].prompts, (std::vector<std::string>{"dog", "cat"}));
  EXPECT_EQ(items[0].start, 3);
  EXPECT_EQ(items[0].max_frames, 5);
  EXPECT_EQ(items[0].direction, "both");
  EXPECT_DOUBLE_EQ(*items[0].fps, 12.5);
  EXPECT_EQ(items[1].id, "y");
  EXPECT_EQ(items[1].prompts, std::vector<std::string>{"shape"});
  EXPECT_FALSE(items[1].start);
  EXPECT_EQ(items[2].path, "/data/z.mp4");
}

TEST(BatchManifest, MistakesNameTheirLine) {
  expect_error("a.mp4\nb/a.mp4\n", "line 2: the id \"a\" is also the id of line 1");
  expect_error("{\"path\": \"a.mp4\", \"colour\": 1}\n", "line 1: unknown key \"colour\"");
  expect_error("a.mp4\n{\"id\": \"x\"}\n", "line 2: no \"path\"");
  expect_error("{\"path\": 7}\n", "\"path\" must be a string");
  expect_error("{\"path\": \"a\", \"id\": \"../up\"}\n", "the id \"../up\" cannot name an output folder");
  expect_error("{\"path\": \"a\", \"id\": \".staging\"}\n", "cannot name an output folder");
  expect_error("{\"path\": \"a\", \"start\": -1}\n", "\"start\" -1 is negative");
  expect_error("{\"path\": \"a\", \"start\": 1e12}\n", "\"start\" must be a whole number");
  expect_error("{\"path\": \"a\", \"start\": 10000000000}\n", "is out of range");
  expect_error("{\"path\": \"a\", \"max_frames\": 0}\n", "\"max_frames\" 0 must be at least 1");
  expect_error("{\"path\": \"a\", \"direction\": \"up\"}\n", "forward, backward or both");
  expect_error("{\"path\": \"a\", \"prompts\": []}\n", "non-empty list");
  expect_error("{\"path\": \"a\", \"prompts\": [\"\"]}\n", "a prompt is empty");
  expect_error("{\"path\": \"a\", \"prompt\": \"x\", \"prompts\": [\"y\"]}\n", "not both");
  expect_error("{\"path\": \"a\"\n", "line 1");  // truncated JSON
  expect_error("# nothing\n\n", "lists no video");
  expect_error("{\"path\": \"a\", \"fps\": 0}\n", "\"fps\" must be positive");
}

TEST(BatchManifest, Ids) {
  EXPECT_TRUE(valid_batch_id("clip-01_v2.final"));
  EXPECT_FALSE(valid_batch_id(""));
  EXPECT_FALSE(valid_batch_id(".hidden"));
  EXPECT_FALSE(valid_batch_id("a/b"));
  EXPECT_FALSE(valid_batch_id(std::string(segmux::pipeline::kMaxBatchIdLength + 1, 'a')));
  EXPECT_EQ(batch_id_from_path("/x/y/clip.v2.mp4"), "clip.v2");
  EXPECT_EQ(batch_id_from_path("/x/.hidden.mp4"), "_hidden");
  EXPECT_EQ(batch_id_from_path("vidéo.mp4"), "vid__o");  // UTF-8 bytes outside the id set
}

TEST(BatchManifest, ReadsAFileRelativeToItsFolder) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("manifest_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "m.txt") << "v.gif\n";
  auto items = segmux::pipeline::read_manifest((dir / "m.txt").string());
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].path, (dir / "v.gif").string());
  EXPECT_THROW(segmux::pipeline::read_manifest((dir / "missing.txt").string()), segmux::Error);
  EXPECT_THROW(segmux::pipeline::read_manifest(dir.string()), segmux::Error);  // a folder
  fs::remove_all(dir);
}
