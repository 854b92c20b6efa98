// Failing writes (a full disk, simulated by the file-size limit) give an error that names the file and
// says why, and leave neither the file nor a temporary behind.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../common/write_limit.h"
#include "io/files.h"
#include "io/pytorch_zip.h"
#include "io/safetensors.h"

using namespace segmux;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "segmux_write_errors_" + std::to_string(::getpid()) + "_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void expect_reason_and_nothing_left(const std::string& msg, const std::string& dir, const std::string& file) {
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(EFBIG)), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_empty(dir)) << "left behind in " << dir << " after: " << msg;
  fs::remove_all(dir);
}

}  // namespace

TEST(WriteErrors, WriteFileAtomicSaysWhyAndLeavesNothing) {
  const std::string dir = fresh_dir("atomic");
  const std::vector<char> bytes(1 << 20, 'x');
  std::string msg = testing_support::error_under_file_size_limit(
      64 << 10, [&] { write_file_atomic(dir + "/out.bin", bytes.data(), bytes.size()); });
  expect_reason_and_nothing_left(msg, dir, "out.bin");
}

TEST(WriteErrors, AtomicFileUncommittedLeavesNothing) {
  const std::string dir = fresh_dir("uncommitted");
  {
    AtomicFile f(dir + "/half.txt");
    f.write("some bytes");
  }
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST(WriteErrors, SafetensorsWriterSaysWhy) {
  const std::string dir = fresh_dir("safetensors");
  Tensor t(DType::f32, {256, 1024});
  std::string msg = testing_support::error_under_file_size_limit(64 << 10, [&] {
    write_safetensors(dir + "/w.safetensors", {{"w", t}});
  });
  expect_reason_and_nothing_left(msg, dir, "w.safetensors");
}

TEST(WriteErrors, CheckpointWriterSaysWhy) {
  const std::string dir = fresh_dir("checkpoint");
  Tensor t(DType::f32, {256, 1024});
  std::string msg = testing_support::error_under_file_size_limit(64 << 10, [&] {
    write_pytorch_checkpoint(dir + "/w.pt", {TorchTensor{"w", t}});
  });
  expect_reason_and_nothing_left(msg, dir, "w.pt");
}
