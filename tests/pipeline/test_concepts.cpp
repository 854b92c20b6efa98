// Several concepts in one run (ConceptSet): one backbone run per frame for all concepts, ids unique
// across concepts, each object labelled with its prompt, removal and reset per the session API.
#include <gtest/gtest.h>

#include <map>

#include "pipeline/media/frame_source.h"
#include "pipeline/predictor/concepts.h"
#include "pipeline/predictor/session_api.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

constexpr int kLow = 16, kIn = 32, kVideo = 64;

// Detects one square per concept (at a place that depends on the text) and tracks every object as
// that square; counts the model calls.
class CountingBackend : public ModelBackend {
 public:
  std::map<int, int> backbone_runs;  // frame -> runs
  int text_encodings = 0;
  std::vector<std::string> current;
  std::map<int, std::vector<int64_t>> state_objects;  // every state id seen -> its objects
  BackendGeometry geometry() const override { return {kLow * 4, kLow, kIn}; }
  void encode_text(const std::vector<std::string>& batch) override {
    ++text_encodings;
    current = batch;
  }
  void run_backbone(int f, const RgbFrame&) override { ++backbone_runs[f]; }
  void release_frame(int) override {}
  static int offset(const std::string& text) { return text == "dog" ? 1 : 9; }
  DetectorOutput detect(int) override {
    DetectorOutput o;
    const int at = offset(current.at(0));
    o.pred_logits = Tensor::from_vector<float>({1}, {4.f});
    o.boxes_xyxy = Tensor::from_vector<float>(
        {1, 4}, {float(at) / kLow, float(at) / kLow, float(at + 5) / kLow, float(at + 5) / kLow});
    o.mask_logits = square(1, at);
    return o;
  }
  TrackerOutput propagate(const TrackerStateView& st, int, bool) override {
    state_objects[st.state_id] = st.obj_ids;
    const int64_t n = int64_t(st.obj_ids.size());
    // Every object keeps the square of the concept whose state this is (states are per concept).
    const int at = text_of_state.count(st.state_id) ? offset(text_of_state[st.state_id]) : 1;
    return {square(n, at), Tensor::from_vector<float>({n}, std::vector<float>(size_t(n), 5.f))};
  }
  void encode_memory(const TrackerStateView&, int, const Tensor&, const Tensor&) override {}
  void add_masks(const TrackerStateView& st, int, const std::vector<int64_t>&, const Tensor&, MaskInputKind,
                 bool) override {
    text_of_state[st.state_id] = current.at(0);
  }
  void remove_objects(const TrackerStateView&, const std::vector<int64_t>&) override {}
  void drop_state(int s) override { dropped.push_back(s); }
  void reset() override {}
  std::map<int, std::string> text_of_state;
  std::vector<int> dropped;

 private:
  static Tensor square(int64_t n, int at) {
    Tensor t(DType::f32, {n, kLow, kLow});
    float* d = t.data<float>();
    for (int64_t i = 0; i < n; ++i)
      for (int y = 0; y < kLow; ++y)
        for (int x = 0; x < kLow; ++x)
          d[(i * kLow + y) * kLow + x] = (y >= at && y < at + 5 && x >= at && x < at + 5) ? 5.f : -5.f;
    return t;
  }
};

ControlConfig small_config() {
  ControlConfig c;
  c.bucket_capacity = 4;
  c.multiplex_count = 4;
  c.max_num_objects = 8;
  return c;
}

}  // namespace

TEST(Concepts, TwoConceptsShareTheBackboneAndGetDistinctIds) {
  CountingBackend be;
  auto src = make_blank_frame_source(6, kVideo, kVideo);
  ConceptSet set(be, *src, small_config());
  FrameOutput dog = set.add_text_prompt(0, "dog");
  FrameOutput cat = set.add_text_prompt(0, "cat");
  EXPECT_EQ(dog.obj_ids, (std::vector<int64_t>{0}));
  EXPECT_EQ(dog.prompts, (std::vector<std::string>{"dog"}));
  EXPECT_EQ(cat.obj_ids, (std::vector<int64_t>{1}));  // ids unique across concepts
  EXPECT_EQ(cat.prompts, (std::vector<std::string>{"cat"}));
  std::vector<FrameOutput> outs;
  ASSERT_TRUE(set.propagate(0, -1, false, [&](FrameOutput o) {
    outs.push_back(std::move(o));
    return true;
  }));
  ASSERT_EQ(outs.size(), 6u);
  for (int f = 0; f < 6; ++f) {
    EXPECT_EQ(outs[size_t(f)].frame_index, f);
    EXPECT_EQ(be.backbone_runs[f], 1) << "frame " << f << ": the backbone runs once for both concepts";
  }
  // Confirmed after 3 frames: the last frames show both objects, each with its prompt.
  EXPECT_EQ(outs.back().obj_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(outs.back().prompts, (std::vector<std::string>{"dog", "cat"}));
  EXPECT_EQ(outs.back().stats.num_obj_tracked, 2);
  EXPECT_LE(be.text_encodings, 2 + 2 * 7) << "text re-selected at most once per concept and frame";
  EXPECT_EQ(set.prompt_of(1), std::optional<std::string>("cat"));
  EXPECT_EQ(set.object_ids(), (std::vector<int64_t>{0, 1}));
  // Tracker states of different concepts never share an id at the backend.
  EXPECT_EQ(be.state_objects.size(), 2u);
}

TEST(Concepts, RemoveRestartResetAndThreshold) {
  CountingBackend be;
  auto src = make_blank_frame_source(4, kVideo, kVideo);
  ConceptSet set(be, *src, small_config());
  set.add_text_prompt(0, "dog");
  set.add_text_prompt(0, "cat");
  EXPECT_TRUE(set.remove_object(1));
  EXPECT_FALSE(set.remove_object(1));
  EXPECT_EQ(set.object_ids(), (std::vector<int64_t>{0}));
  // Re-prompting a concept restarts only that concept; ids are never reused.
  FrameOutput again = set.add_text_prompt(1, "dog");
  EXPECT_EQ(again.obj_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(set.prompts(), (std::vector<std::string>{"dog", "cat"}));
  // A threshold above the detection score hides that concept's objects.
  FrameOutput hidden = set.add_text_prompt(1, "cat", 0.99f);
  EXPECT_TRUE(hidden.obj_ids.empty());
  EXPECT_THROW(set.add_text_prompt(1, "cat", 1.5f), Error);
  EXPECT_THROW(set.add_text_prompt(1, ""), Error);
  set.reset();
  EXPECT_TRUE(set.empty());
  EXPECT_THROW(set.propagate(0, -1, false, [](FrameOutput) { return true; }), Error);
  EXPECT_EQ(set.add_text_prompt(0, "cat").obj_ids, (std::vector<int64_t>{0}));  // ids start again
}

TEST(Concepts, SessionApiCancelAndRemoveWithFrame) {
  CountingBackend be;
  VideoPredictor predictor(be, small_config());
  std::string id = predictor.start_session(make_blank_frame_source(40, kVideo, kVideo));
  predictor.add_prompt(id, 0, Prompt::from_text("dog"));
  predictor.add_prompt(id, 0, Prompt::from_text("cat"));
  predictor.keep_outputs(id, true);
  int delivered = 0;
  predictor.propagate_in_video(id, {PropagationDirection::Forward, 0, std::nullopt}, [&](const FrameOutput&) {
    if (++delivered == 1) predictor.cancel_propagation(id);  // as another thread would
    return true;
  });
  EXPECT_LT(be.backbone_runs.size(), 40u) << "cancel_propagation stops the run";
  EXPECT_THROW(predictor.remove_object(id, 0, 40), Error);  // frame out of range
  auto before = predictor.frame_outputs(id, 3);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->obj_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(predictor.frame_outputs(id, 39).has_value()) << "not propagated";
  EXPECT_TRUE(predictor.remove_object(id, 0, 3));
  // The official remove_object response: the frame's outputs without the object.
  EXPECT_EQ(predictor.frame_outputs(id, 3)->obj_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(predictor.frame_outputs(id, 3)->prompts, (std::vector<std::string>{"cat"}));
  EXPECT_FALSE(predictor.remove_object(id, 0, 3));
}
