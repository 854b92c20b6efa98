// Hostile command lines (issue 22), run as the built binary: every refusal is a clear message with
// exit 2 (usage) or 1, at once, before any model is opened.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/run_command.h"

namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "segmux_hostile_cli_" + std::to_string(::getpid()) + "_" + name;
}

// `segmux ARGS` with stderr kept, at most 60 s (a hang shows as exit 124).
segmux::test::CommandResult segmux_run(const std::string& args) {
  return segmux::test::run_segmux(args, "2>&1 </dev/null", "timeout 60");
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

TEST(HostileCli, ContextMustBeAContextLength) {
  const std::string vocab = kFixture + "/tokenizer";
  auto r = segmux_run("tokenize dog --vocab " + vocab + " --context -1");  // silently ignored before
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--context -1 is not a context length (2..1024 tokens)");
  r = segmux_run("tokenize dog --vocab " + vocab + " --context 100000");
  EXPECT_EQ(r.code, 2) << r.out;
  r = segmux_run("tokenize dog --vocab " + vocab + " --context 8");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(HostileCli, TrackRefusesAFifoAndANonUtf8PromptAtOnce) {
  const std::string fifo = temp("video.mp4");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Before: blocked for ever opening the FIFO.
  auto r = segmux_run("track " + fifo + " --prompt dog --demo --out " + temp("out_fifo"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "is a named pipe (FIFO), not a regular file");
  ::unlink(fifo.c_str());
  // Before: the outputs' JSON failed with a raw "type_error 316".
  r = segmux_run("track " + kFixture + "/video/frames --prompt \"$(printf 'd\\377g')\" --demo --out " +
                 temp("out_utf8"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--prompt \"d\\xFFg\" is not valid UTF-8 text");
  EXPECT_EQ(r.out.find("json.exception"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(temp("out_utf8"))) << "a refused run left its output folder";
}
