// Two sessions of one model (pipeline/backends/model.h): each owns its text encodings, frame features
// and tracker memories, so two videos driven in turns on the same frame indices give each exactly what
// it gets alone, and neither session's backbone runs again because of the other. Runs are counted by
// runners wrapped around the model's compiled files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "models/sam31/tokenizer.h"
#include "pipeline/backends/candidate_model.h"
#include "pipeline/backends/smx_runner.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"
#include "pipeline/predictor/concepts.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/control_plane.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::pipeline {
namespace {

namespace fs = std::filesystem;
const std::string kTiny = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

using RunCounts = std::map<std::string, int>;  // compiled file -> runs

class CountingRunner : public CandidateRunner {
 public:
  CountingRunner(std::unique_ptr<CandidateRunner> inner, std::string file, RunCounts& runs)
      : inner_(std::move(inner)), file_(std::move(file)), runs_(runs) {}
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& in) override {
    ++runs_[file_];
    return inner_->run(in);
  }
  void set_wanted_outputs(std::vector<std::string> names) override { inner_->set_wanted_outputs(std::move(names)); }
  bool has_output(const std::string& name) const override { return inner_->has_output(name); }
  void release() override { inner_->release(); }

 private:
  std::unique_ptr<CandidateRunner> inner_;
  std::string file_;
  RunCounts& runs_;
};

// Another video of the same size and length: the frames in reverse order.
class ReversedFrames : public FrameSource {
 public:
  explicit ReversedFrames(std::unique_ptr<FrameSource> src) : src_(std::move(src)) {}
  int num_frames() const override { return src_->num_frames(); }
  int width() const override { return src_->width(); }
  int height() const override { return src_->height(); }
  RgbFrame frame(int index) override { return src_->frame(src_->num_frames() - 1 - index); }

 private:
  std::unique_ptr<FrameSource> src_;
};

// One frame's outputs in a comparable form (masks as RLE, scores and boxes exact).
struct Seen {
  int frame_index;
  std::vector<int64_t> obj_ids;
  std::vector<float> probs;
  std::vector<std::array<float, 4>> boxes;
  std::vector<std::vector<int64_t>> masks;
  bool operator==(const Seen&) const = default;
};
void PrintTo(const Seen& s, std::ostream* os) {
  *os << "frame " << s.frame_index << " ids [";
  for (size_t i = 0; i < s.obj_ids.size(); ++i) *os << (i ? "," : "") << s.obj_ids[i];
  *os << "]";
}
Seen seen(const FrameOutput& o) {
  Seen s{o.frame_index, o.obj_ids, o.probs, o.boxes_xywh, {}};
  for (const auto& m : o.masks) s.masks.push_back(rle_encode(m).counts);
  return s;
}

// One video on a model session: a text prompt on frame 0, then a forward propagation driven a frame
// at a time (step()), so that two videos can take turns.
class Video {
 public:
  Video(Model& model, std::unique_ptr<FrameSource> frames, std::string text, int max_frames)
      : session_(model.new_session()),
        frames_(std::move(frames)),
        control_(*session_, *frames_, segmux::verify::load_fixture_control_config(kTiny + "/config.json")),
        text_(std::move(text)),
        max_frames_(max_frames) {}
  void prompt() { out_.push_back(seen(control_.add_text_prompt(0, text_))); }
  void start() {
    run_ = control_.start_propagation(0, max_frames_, false, [this](FrameOutput o) {
      out_.push_back(seen(o));
      return true;
    });
  }
  bool step() {  // false when done
    if (run_->done()) return false;
    run_->step();
    return true;
  }
  void finish() { run_->finish(); }
  const std::vector<Seen>& outputs() const { return out_; }

 private:
  std::unique_ptr<ModelSession> session_;
  std::unique_ptr<FrameSource> frames_;
  VideoControlPlane control_;
  std::string text_;
  int max_frames_;
  std::unique_ptr<VideoControlPlane::Propagation> run_;
  std::vector<Seen> out_;
};

class ModelSessions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::path(::testing::TempDir()) / ("segmux_model_sessions_" + std::to_string(::getpid()));
    ModelSource src;
    src.weights = kTiny + "/weights.safetensors";
    src.config = kTiny + "/config.json";
    src.read_config = segmux::verify::load_fixture_config;
    src.vocab = kTiny + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
    src.cache_dir = (root_ / "cache").string();
    OpenedModel opened = open_model(src, [](const std::string&) {});
    const std::string dir = opened.model_dir;
    runs_ = new RunCounts;
    model_ = new std::shared_ptr<Model>(open_candidate_model(
        opened.config,
        [dir](const sam31::CompiledFile& f) -> std::unique_ptr<CandidateRunner> {
          return std::make_unique<CountingRunner>(
              open_smx_runner(dir + "/" + f.file + ".smx", ExecutorOptions{1, true}), f.file, *runs_);
        },
        sam31::Tokenizer::load(src.vocab, opened.config.text_context_length)));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete runs_;
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static Model& model() { return **model_; }
  static int runs(const std::string& file) { return (*runs_)[file]; }
  static std::unique_ptr<FrameSource> frames() { return open_video(kTiny + "/video/frames"); }

  static fs::path root_;
  static std::shared_ptr<Model>* model_;
  static RunCounts* runs_;
};
fs::path ModelSessions::root_;
std::shared_ptr<Model>* ModelSessions::model_ = nullptr;
RunCounts* ModelSessions::runs_ = nullptr;

constexpr int kFrames = 5;  // frames propagated after the prompt frame

std::vector<Seen> alone(Model& model, std::unique_ptr<FrameSource> frames, const std::string& text) {
  Video v(model, std::move(frames), text, kFrames);
  v.prompt();
  v.start();
  while (v.step()) {
  }
  v.finish();
  return v.outputs();
}

TEST_F(ModelSessions, TwoVideosInTurnsOnTheSameFramesAnswerAsAloneWithoutExtraBackboneRuns) {
  const int b0 = runs("backbone"), t0 = runs("text_encoder");
  const std::vector<Seen> a_alone = alone(model(), frames(), "shape");
  const int a_backbone = runs("backbone") - b0, a_text = runs("text_encoder") - t0;
  const std::vector<Seen> b_alone = alone(model(), std::make_unique<ReversedFrames>(frames()), "square");
  const int b_backbone = runs("backbone") - b0 - a_backbone;
  ASSERT_GT(a_alone.size(), 1u);
  ASSERT_FALSE(a_alone.front().obj_ids.empty()) << "the prompt finds objects (else the comparison shows little)";
  ASSERT_NE(a_alone, b_alone) << "the two videos must differ for the test to mean anything";
  EXPECT_EQ(a_text, 1) << "a session encodes its text once";

  const int b1 = runs("backbone"), t1 = runs("text_encoder");
  Video a(model(), frames(), "shape", kFrames);
  Video b(model(), std::make_unique<ReversedFrames>(frames()), "square", kFrames);
  a.prompt();  // both on frame 0: each session holds its own frame 0
  b.prompt();
  a.start();
  b.start();
  bool more = true;
  while (more) {  // frame k of a, then frame k of b, ...
    more = a.step();
    more = b.step() || more;
  }
  a.finish();
  b.finish();
  EXPECT_EQ(a.outputs(), a_alone);
  EXPECT_EQ(b.outputs(), b_alone);
  EXPECT_EQ(runs("backbone") - b1, a_backbone + b_backbone) << "no backbone run again for the other session";
  EXPECT_EQ(runs("text_encoder") - t1, 2) << "each session encodes its own text once";
}

TEST_F(ModelSessions, TwoVideosOnTwoThreadsAnswerAsAlone) {
  // The model is safe from any thread: sessions on two threads at once queue on its run lock.
  const std::vector<Seen> a_alone = alone(model(), frames(), "shape");
  const std::vector<Seen> b_alone = alone(model(), std::make_unique<ReversedFrames>(frames()), "square");
  std::vector<Seen> a_out, b_out;
  std::string a_error, b_error;
  auto run = [](std::vector<Seen>& out, std::string& error, std::unique_ptr<FrameSource> src, std::string text) {
    try {
      out = alone(model(), std::move(src), text);
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  std::thread a(run, std::ref(a_out), std::ref(a_error), frames(), "shape");
  std::thread b(run, std::ref(b_out), std::ref(b_error), std::make_unique<ReversedFrames>(frames()), "square");
  a.join();
  b.join();
  EXPECT_EQ(a_error, "");
  EXPECT_EQ(b_error, "");
  EXPECT_EQ(a_out, a_alone);
  EXPECT_EQ(b_out, b_alone);
}

TEST_F(ModelSessions, ConceptsOfOneSessionRunTheBackboneOncePerFrame) {
  // Two concepts on one session share its frame features.
  auto session = model().new_session();
  auto src = frames();
  ConceptSet set(*session, *src, segmux::verify::load_fixture_control_config(kTiny + "/config.json"));
  const int b0 = runs("backbone");
  set.add_text_prompt(0, "shape");
  set.add_text_prompt(0, "square");
  int delivered = 0;
  set.propagate(0, kFrames, false, [&](FrameOutput) {
    ++delivered;
    return true;
  });
  EXPECT_EQ(delivered, kFrames + 1);
  // Frame 0 once for both prompts (the propagation starts on it while the session holds it), then
  // every later frame once for both concepts.
  EXPECT_EQ(runs("backbone") - b0, kFrames + 1);
}

}  // namespace
}  // namespace segmux::pipeline
