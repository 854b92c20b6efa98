// The model's runner of one .smx file (pipeline/backends/smx_runner.h): the file is verified when it
// is opened (a flipped byte is refused then, before any run), the executor is made on the first run and
// dropped by release(); a run after release() gives the same values; wanted outputs limit the result.
// And the model glue asks for that: the text encoder is released once frames are processed, and the
// backbone and detector return only what the glue reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/random_tensor.h"
#include "compiler/compile.h"
#include "core/error.h"
#include "ir/builder.h"
#include "models/sam31/config.h"
#include "models/sam31/tensor_names.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/candidate_model.h"
#include "pipeline/backends/smx_runner.h"
#include "runtime/offline_model.h"
#include "runtime/verified_memo.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::pipeline {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("segmux-smx-runner-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::string write_model(const fs::path& dir) {
  ir::Graph g;
  ir::GraphBuilder b(g);
  int x = b.input("x", DType::f32, {4, 64});
  int h = b.op1("MatMul", {x, b.constant(test::random_tensor({64, 64}, 3), "w")});
  b.output(b.op1("Tanh", {h}), "a");
  b.output(b.op1("Sigmoid", {h}), "b");
  compiler::CompileOptions opt;
  auto c = compiler::compile_graph(g, opt);
  const std::string path = (dir / "m.smx").string();
  compiler::write_compiled(path, c, opt);
  return path;
}

// Flips one bit pattern inside the weights of a compiled file, in place.
void flip_a_weight_byte(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = std::streamoff(fs::file_size(path) - 100);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  f.seekp(at);
  c = char(c ^ 0x21);
  f.write(&c, 1);
}

TEST(SmxRunner, ReleaseAndRunAgainGiveTheSameValuesAndWantedOutputsLimitTheResult) {
  TempDir tmp;
  auto runner = open_smx_runner(write_model(tmp.path), ExecutorOptions{1, true});
  std::map<std::string, Tensor> in{{"x", test::random_tensor({4, 64}, 5)}};
  auto first = runner->run(in);
  ASSERT_EQ(first.size(), 2u);
  runner->release();
  runner->release();  // twice: nothing to drop the second time
  runner->set_wanted_outputs({"b"});
  auto again = runner->run(in);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again.at("b").identical(first.at("b")));
}

TEST(SmxRunner, AFlippedByteIsRefusedWhenTheRunnerOpens) {
  TempDir tmp;
  const std::string path = write_model(tmp.path);
  flip_a_weight_byte(path);
  try {
    open_smx_runner(path, ExecutorOptions{1, true});
    FAIL() << "a damaged file must be refused at open, not at its first run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
}

// A memo of a file verified in full lets the next open skip hashing its weights; any write to the
// file changes its identity, so a flipped byte is still refused.
TEST(VerifiedMemo, SkipsTheWeightsOfAFileVerifiedBeforeAndNeverOfAModifiedOne) {
  TempDir tmp;
  const std::string path = write_model(tmp.path), memos = (tmp.path / "memos").string();
  LoadOptions load;
  load.verified_memo_dir = memos;
  load_offline_model_file(path, load);
  const std::string memo = verified_memo_path(path, memos);
  ASSERT_FALSE(memo.empty());
  EXPECT_TRUE(fs::exists(memo)) << "a file verified in full gets its memo";
  flip_a_weight_byte(path);
  EXPECT_NE(verified_memo_path(path, memos), memo) << "a write changes the file's identity";
  EXPECT_THROW(load_offline_model_file(path, load), Error);
  EXPECT_THROW(open_smx_runner(path, ExecutorOptions{1, true}, load), Error);
  EXPECT_FALSE(fs::exists(verified_memo_path(path, memos))) << "no memo for a file that failed";
  // The memo is what skips the weights: one made for the damaged file (as if it had been verified)
  // lets it open, while without memos it is refused.
  write_verified_memo(verified_memo_path(path, memos), path);
  EXPECT_NO_THROW(load_offline_model_file(path, load));
  EXPECT_THROW(load_offline_model_file(path), Error);
}

// A runner that records what the glue asks of it and returns zeros for every name it is asked for.
struct Calls {
  std::map<std::string, std::vector<std::string>> wanted;
  std::map<std::string, int> releases, runs;
  std::vector<std::string> order;  // "run FILE" / "release FILE"
};

class FakeRunner : public CandidateRunner {
 public:
  FakeRunner(std::string file, Calls& calls) : file_(std::move(file)), calls_(calls) {}
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>&) override {
    ++calls_.runs[file_];
    calls_.order.push_back("run " + file_);
    namespace te = sam31::names::text_encoder;
    std::vector<std::string> names = calls_.wanted[file_];
    if (names.empty()) names = {te::kLanguageFeatures, te::kLanguageMask};
    std::map<std::string, Tensor> out;
    for (const auto& n : names) out[n] = Tensor(DType::f32, {1});
    if (file_ == "detector") {  // one query, in the layouts the glue reshapes
      namespace det = sam31::names::detector;
      out[det::kPredLogits] = Tensor(DType::f32, {1, 1});
      out[det::kPredBoxesXyxy] = Tensor(DType::f32, {1, 1, 4});
      out[det::kPredMasks] = Tensor(DType::f32, {1, 1, 2, 2});
    }
    return out;
  }
  void set_wanted_outputs(std::vector<std::string> names) override { calls_.wanted[file_] = std::move(names); }
  void release() override {
    ++calls_.releases[file_];
    calls_.order.push_back("release " + file_);
  }

 private:
  std::string file_;
  Calls& calls_;
};

TEST(CandidateModelGlue, TextEncoderReleasedForFramesAndOnlyUsedOutputsAsked) {
  const std::string fixtures = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";
  sam31::ModelConfig cfg = segmux::verify::load_fixture_config(fixtures + "/config.json");
  sam31::Tokenizer tok =
      sam31::Tokenizer::load(fixtures + "/tokenizer/bpe_simple_vocab_16e6.txt.gz", cfg.text_context_length);
  Calls calls;
  auto model = open_candidate_model(
      cfg, [&](const sam31::CompiledFile& f) { return std::make_unique<FakeRunner>(f.file, calls); }, tok);
  namespace bb = sam31::names::backbone;
  const auto& bb_wanted = calls.wanted["backbone"];
  // 10 outputs the glue reads for every frame, plus the bf16-rounded high-resolution features of the
  // propagation after clicks, which this runner has (models compiled before them lack them).
  EXPECT_EQ(bb_wanted.size(), 12u);
  const std::set<std::string> bb_set(bb_wanted.begin(), bb_wanted.end());
  EXPECT_EQ(bb_set.count(bb::kVitTrunk), 0u);
  EXPECT_EQ(bb_set.count(bb::kHighResS0Cached), 1u);
  EXPECT_EQ(calls.wanted["detector"].size(), 4u);
  const std::vector<std::string> dog = {"dog", "visual", "geometric"};
  auto session = model->new_session();
  const Tensor image(DType::f32, {1, 3, cfg.image_size, cfg.image_size});
  session->run_backbone_input(0, image, 8, 8);
  ASSERT_EQ(calls.order.size(), 2u);
  EXPECT_EQ(calls.order[0], "release text_encoder") << "released before the backbone runs";
  EXPECT_EQ(calls.order[1], "run backbone");
  session->detect(0, dog, {});
  EXPECT_EQ(calls.runs["text_encoder"], 1);
  EXPECT_EQ(calls.runs["detector"], 1);
  session->detect(0, dog, {});  // the session keeps the encoding: the encoder is not run again
  EXPECT_EQ(calls.runs["text_encoder"], 1);
  EXPECT_EQ(calls.releases["text_encoder"], 1) << "kept while the frame's prompts are detected";
  session->run_backbone_input(1, image, 8, 8);
  EXPECT_EQ(calls.order.end()[-2], "release text_encoder");
  EXPECT_EQ(calls.order.end()[-1], "run backbone");
  // Another session of the model has encodings of its own; the model's runners are shared.
  auto other = model->new_session();
  other->run_backbone_input(0, image, 8, 8);
  other->detect(0, dog, {});
  EXPECT_EQ(calls.runs["text_encoder"], 2);
  EXPECT_EQ(calls.runs["backbone"], 3);
  EXPECT_THROW(other->detect(1, dog, {}), Error) << "frame 1 is the first session's";
}

}  // namespace
}  // namespace segmux::pipeline
