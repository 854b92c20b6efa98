// The parity driver: tolerance semantics of check_output, and `run_parity` on the tiny fixture for
// the text encoder, backbone and detector (reference kernels, optimized kernels, ONNX Runtime when
// available) plus the tokenizer cases.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "verify/ort_peer.h"
#include "verify/sam31/parity.h"

namespace segmux::sam31 {
namespace {

const std::string kDir = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

TEST(CheckOutput, ToleranceIsRelativeToTheReferenceMaximum) {
  Tensor ref = Tensor::from_vector<float>({4}, {10.0f, -20.0f, 5.0f, 0.0f});
  Tensor got = Tensor::from_vector<float>({4}, {10.0f, -20.0f, 5.0f + 1.9e-3f, 0.0f});
  verify::OutputCheck c = verify::check_output(got, ref, verify::Tolerance{});
  EXPECT_TRUE(c.pass);
  EXPECT_NEAR(c.ratio, 1.9e-3 / 20.0, 1e-7);  // float rounding of 5 + 1.9e-3
  got.data<float>()[2] = 5.0f + 2.2e-3f;      // 1.1e-4 of max|ref|
  EXPECT_FALSE(verify::check_output(got, ref, verify::Tolerance{}).pass);
}

TEST(CheckOutput, ScaleOfAtLeastOneAndMaskIou) {
  verify::Tolerance t;
  t.min_cosine = 0.9999;
  t.max_abs_over_scale = 2e-2;
  t.scale_is_max_ref = false;
  t.check_mask_iou = true;
  Tensor ref = Tensor::from_vector<float>({4}, {0.5f, -0.5f, 0.25f, -0.25f});
  Tensor got = Tensor::from_vector<float>({4}, {0.51f, -0.5f, 0.25f, -0.25f});
  verify::OutputCheck c = verify::check_output(got, ref, t);
  EXPECT_NEAR(c.ratio, 0.01, 1e-6);  // scale = max(1, 0.5)
  EXPECT_EQ(c.mask_iou, 1.0);
  got.data<float>()[1] = 0.001f;  // flips one mask pixel
  c = verify::check_output(got, ref, t);
  EXPECT_FALSE(c.pass);
  EXPECT_NEAR(c.mask_iou, 2.0 / 3.0, 1e-9);
}

TEST(CheckOutput, ShapeMismatchAndNanFail) {
  Tensor ref = Tensor::from_vector<float>({2}, {1.0f, 2.0f});
  EXPECT_FALSE(verify::check_output(Tensor::from_vector<float>({1, 2}, {1.0f, 2.0f}), ref, verify::Tolerance{}).pass);
  EXPECT_FALSE(verify::check_output(Tensor::from_vector<float>({2}, {1.0f, std::numeric_limits<float>::quiet_NaN()}),
                                    ref, verify::Tolerance{})
                   .pass);
  EXPECT_TRUE(verify::check_output(ref, ref, verify::Tolerance{}).pass);
}

TEST(Parity, TextEncoderBackboneDetectorAndTokenizerPassOnTheTinyFixture) {
  verify::ParityOptions o;
  o.fixture_dir = kDir;
  o.weights_files = {kDir + "/weights.safetensors"};
  o.candidates = {"text_encoder", "backbone", "detector", "tokenizer"};
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> seen_backends, seen_candidates;
  for (auto& row : r.rows) seen_backends.insert(row.backend), seen_candidates.insert(row.candidate);
  EXPECT_TRUE(seen_candidates.count("text_encoder") && seen_candidates.count("backbone") &&
              seen_candidates.count("detector") && seen_candidates.count("tokenizer"));
  EXPECT_TRUE(seen_backends.count("reference") && seen_backends.count("optimized"));
  if (ort_available()) {
    EXPECT_TRUE(seen_backends.count("onnxruntime")) << log.str();
  }
}

// A fixture set whose per-frame module files carry other frame numbers (prompted on another frame,
// other propagation frames) is read from what the folder holds, not from fixed names: here a copy of
// the tiny fixture (symlinks) with every per-frame file renamed.
TEST(Parity, ReadsThePerFrameFilesTheFolderHolds) {
  namespace fs = std::filesystem;
  const fs::path copy = fs::temp_directory_path() / ("segmux-parity-renamed-" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::create_directories(copy / "modules");
  fs::create_directories(copy / "video");
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().filename() != "modules" && e.path().filename() != "video")
      fs::create_symlink(e.path(), copy / e.path().filename());
  auto renamed = [](std::string f) {
    for (auto [from, to] : {std::pair{"_f001", "_f021"}, std::pair{"_f010", "_f030"}, std::pair{"_f000", "_f020"},
                            std::pair{"raw_frame_000_add_prompt", "raw_frame_020_add_prompt"}})
      if (auto at = f.find(from); at != std::string::npos) f.replace(at, std::string(from).size(), to);
    return f;
  };
  for (const char* sub : {"modules", "video"})
    for (const auto& e : fs::directory_iterator(fs::path(kDir) / sub))
      fs::create_symlink(e.path(), copy / sub / renamed(e.path().filename().string()));

  verify::ParityOptions o;
  o.fixture_dir = copy.string();
  o.weights_files = {kDir + "/weights.safetensors"};
  o.candidates = {"propagation_decoder", "memory_encoder", "interactive_decoder"};
  o.optimized = o.compiled = o.onnxruntime = o.tokenizer = false;
  o.num_threads = 1;
  std::ostringstream log;
  verify::ParityReport r = verify::run_parity(o, &log);
  fs::remove_all(copy);
  EXPECT_TRUE(r.passed()) << log.str();
  std::set<std::string> labels;
  for (auto& row : r.rows) labels.insert(row.case_label);
  EXPECT_TRUE(labels.count("propagation_f021") && labels.count("propagation_f030")) << log.str();
  EXPECT_TRUE(labels.count("memory_encoder_add_prompt_f020") && labels.count("memory_encoder_propagate_f030"))
      << log.str();
}

TEST(Parity, MissingFolderIsAnError) {
  verify::ParityOptions o;
  o.fixture_dir = kDir + "/no-such-folder";
  EXPECT_THROW(verify::run_parity(o), Error);
}

}  // namespace
}  // namespace segmux::sam31
