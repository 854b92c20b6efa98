// Path checks and folder creation name the path and the reason (issue 22: a raw "filesystem error:
// cannot create directories" and a FIFO waited on for ever).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hardening_util.h"
#include "io/paths.h"

using namespace segmux;
using namespace segmux::hardening;

TEST(PathHardening, FoldersThatCannotBeMadeAreNamedWithTheReason) {
  const std::string msg = expect_error([] { make_directories("/dev/null/segmux/cache"); },
                                       {"cannot create the folder '/dev/null/segmux/cache': Not a directory"});
  EXPECT_EQ(msg.find("filesystem error"), std::string::npos) << msg;
  const std::string file = write_temp("a_file", "x");
  expect_error([&] { make_directories(file); }, {"cannot create the folder '" + file + "': Not a directory"});
  const std::string ok = temp_path("made");
  make_directories(ok + "/a/b");
  EXPECT_TRUE(std::filesystem::is_directory(ok + "/a/b"));
  make_directories(ok + "/a/b");  // existing: fine
  std::filesystem::remove_all(ok);
}

TEST(PathHardening, OnlyRegularFilesPass) {
  const std::string fifo = temp_path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  expect_error([&] { require_regular_file(fifo, "input"); }, {"input '" + fifo + "' is a named pipe (FIFO)"});
  expect_error([] { require_regular_file("/dev/null", "image"); }, {"image '/dev/null' is a character device"});
  expect_error([] { require_regular_file("/", "input"); }, {"input '/' is a folder, not a regular file"});
  expect_error([] { require_regular_file("/nonexistent/v.mp4", "input"); },
               {"cannot read input '/nonexistent/v.mp4': No such file"});
  EXPECT_NO_THROW(require_regular_file(write_temp("regular", "x"), "input"));
}
