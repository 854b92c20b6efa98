// The output folder protocol of `segmux batch`: one claim per video at a time, a staging folder that
// becomes DIR/<id>/ in one rename, no partial output after a failure, abandoned staging removed, an
// earlier finisher's outputs kept, failure records and summaries.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pipeline/batch/batch_folder.h"

namespace fs = std::filesystem;
using segmux::pipeline::BatchFolder;

namespace {

class BatchFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("batch_folder_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

}  // namespace

TEST_F(BatchFolderTest, ClaimStageCommit) {
  BatchFolder f(dir_.string());
  EXPECT_FALSE(f.done("v"));
  {
    auto claim = f.claim("v");
    ASSERT_TRUE(claim);
    EXPECT_TRUE(fs::is_empty(claim->stage()));
    EXPECT_FALSE(f.claim("v")) << "a second claim while the first is held";
    write(fs::path(claim->stage()) / "tracks.json", "{}");
    EXPECT_FALSE(f.done("v")) << "staged outputs are not done";
    EXPECT_TRUE(claim->commit());
  }
  EXPECT_TRUE(f.done("v"));
  EXPECT_EQ(read(dir_ / "v" / "tracks.json"), "{}");
  EXPECT_FALSE(f.claim("v")) << "a done video is not claimed again";
  f.tidy();
  EXPECT_FALSE(fs::exists(dir_ / ".staging")) << "nothing left in staging";
}

TEST_F(BatchFolderTest, AnotherShardsTidyDoesNotStopTheNextClaim) {
  BatchFolder f(dir_.string());
  BatchFolder(dir_.string()).tidy();  // another shard finished and removed the empty staging folder
  ASSERT_FALSE(fs::exists(dir_ / ".staging"));
  auto claim = f.claim("v");
  ASSERT_TRUE(claim);
  EXPECT_TRUE(fs::is_directory(claim->stage()));
}

TEST_F(BatchFolderTest, NoPartialOutputWithoutCommit) {
  BatchFolder f(dir_.string());
  {
    auto claim = f.claim("v");
    ASSERT_TRUE(claim);
    write(fs::path(claim->stage()) / "half.png", "x");
  }  // a failure: the claim goes without commit
  EXPECT_FALSE(f.done("v"));
  EXPECT_FALSE(fs::exists(dir_ / ".staging" / "v"));
  EXPECT_TRUE(f.claim("v")) << "the lock is released";
}

TEST_F(BatchFolderTest, AbandonedStagingIsRemovedAndALiveClaimIsRespected) {
  BatchFolder f(dir_.string());
  // A process that died mid-video left its staging folder; its lock died with it.
  fs::create_directories(dir_ / ".staging" / "v");
  write(dir_ / ".staging" / "v" / "00000.png", "stale");
  auto claim = f.claim("v");
  ASSERT_TRUE(claim);
  EXPECT_TRUE(fs::is_empty(claim->stage())) << "the abandoned frames are gone";
  // Another process sees the video held (the lock is per open file, as between processes).
  const pid_t child = fork();
  if (child == 0) {
    BatchFolder other(dir_.string());
    _exit(other.claim("v") ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the other process claimed a held video";
}

TEST_F(BatchFolderTest, AnEarlierFinisherKeepsItsOutputs) {
  BatchFolder f(dir_.string());
  auto claim = f.claim("v");
  ASSERT_TRUE(claim);
  write(fs::path(claim->stage()) / "tracks.json", "late");
  fs::create_directories(dir_ / "v");  // finished meanwhile by a process that did not see our lock
  write(dir_ / "v" / "tracks.json", "early");
  EXPECT_FALSE(claim->commit());
  claim.reset();
  EXPECT_EQ(read(dir_ / "v" / "tracks.json"), "early");
  EXPECT_FALSE(fs::exists(dir_ / ".staging" / "v"));
}

TEST_F(BatchFolderTest, FailureRecordsAndSummaries) {
  BatchFolder f(dir_.string());
  EXPECT_FALSE(f.failure("bad"));
  f.record_failure("bad", {{"reason", "cannot decode frame 3"}, {"path", "/x/bad.mp4"}});
  EXPECT_EQ(f.failure("bad"), "cannot decode frame 3");
  write(dir_ / ".failed" / "mangled.json", "{not json");
  ASSERT_TRUE(f.failure("mangled"));
  EXPECT_NE(f.failure("mangled")->find("unreadable"), std::string::npos);
  f.write_summary({1, 3}, {{"done", 2}});
  EXPECT_EQ(f.summary_path({1, 3}), (dir_ / ".summary" / "shard-1-of-3.json").string());
  EXPECT_NE(read(f.summary_path({1, 3})).find("\"done\": 2"), std::string::npos);
}

TEST_F(BatchFolderTest, AnOutputFolderThatCannotBeMadeIsNamed) {
  fs::create_directories(dir_);
  write(dir_ / "file", "x");
  try {
    BatchFolder f((dir_ / "file" / "out").string());
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create folder"), std::string::npos) << e.what();
  }
}

TEST_F(BatchFolderTest, TransientFailuresAreTheMachinesNotTheVideos) {
  BatchFolder f(dir_.string());
  EXPECT_FALSE(f.transient_failure("cannot decode frame 3 of 'a.mp4': Invalid data found when processing input"));
  EXPECT_TRUE(f.transient_failure("cannot write 'x/masks/00003.png': No space left on device"));
  EXPECT_TRUE(f.transient_failure("cannot read 'a.mp4': Stale file handle"));
  EXPECT_TRUE(f.transient_failure("cannot open 'a.mp4': Too many open files"));
  EXPECT_FALSE(fs::exists(dir_ / ".staging" / (".probe-" + std::to_string(::getpid())))) << "probe left behind";
  f.tidy();  // another shard removed the empty staging folder: the folder is still healthy
  EXPECT_FALSE(f.transient_failure("cannot decode frame 3"));
  // An output folder that no longer takes a file (here its staging folder became a file): the
  // machine's fault whatever the message says.
  fs::remove_all(dir_ / ".staging");
  write(dir_ / ".staging", "not a folder");
  EXPECT_TRUE(f.transient_failure("cannot decode frame 3"));
}
