// Several concepts in one run (ConceptSet): one backbone run per frame for all concepts, ids unique
// across concepts, each object labelled with its prompt, removal and reset per the session API.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "pipeline/media/frame_source.h"
#include "pipeline/predictor/concepts.h"
#include "pipeline/predictor/session_api.h"

using namespace segmux;
using namespace segmux::pipeline;

namespace {

constexpr int kLow = 16, kIn = 32, kVideo = 64;

// Detects one square per concept (at a place that depends on the text) and tracks every object as
// that square; counts the model calls of all its sessions.
class CountingModel : public Model {
 public:
  std::map<int, int> backbone_runs;                   // frame -> runs
  int text_encodings = 0;                             // text batches encoded (each session encodes a batch once)
  std::vector<std::string> encode_order;              // "text <prompt>" / "backbone <frame>", as encoded / run
  std::vector<std::string> current;                   // the last detection's text
  std::map<int, std::vector<int64_t>> state_objects;  // every state id seen -> its objects
  size_t box_exemplars = 0;                           // box exemplars the detector was given
  std::map<int, std::string> text_of_state;
  std::vector<int> dropped;
  ModelGeometry geometry() const override { return {kLow * 4, kLow, kIn}; }
  std::unique_ptr<ModelSession> new_session() override;
  static int offset(const std::string& text) { return text == "dog" ? 1 : 9; }
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

class CountingSession : public ModelSession {
 public:
  explicit CountingSession(CountingModel& m) : m_(m) {}
  ModelGeometry geometry() const override { return m_.geometry(); }
  void run_backbone(int f, const RgbFrame&) override {
    if (held_.insert(f).second) ++m_.backbone_runs[f];
    m_.encode_order.push_back("backbone " + std::to_string(f));
  }
  void prepare_text(const std::vector<std::string>& text) override { encode(text); }
  bool has_frame(int f) const override { return held_.count(f) != 0; }
  void release_frame(int f) override { held_.erase(f); }
  DetectorOutput detect(int f, const std::vector<std::string>& text,
                        const std::vector<sam31::BoxExemplar>& boxes) override {
    SEGMUX_CHECK(held_.count(f), "detect on frame ", f, " without its features");
    encode(text);
    m_.current = text;
    m_.box_exemplars += boxes.size();
    DetectorOutput o;
    const int at = CountingModel::offset(text.at(0));
    o.pred_logits = Tensor::from_vector<float>({1}, {4.f});
    o.boxes_xyxy = Tensor::from_vector<float>(
        {1, 4}, {float(at) / kLow, float(at) / kLow, float(at + 5) / kLow, float(at + 5) / kLow});
    o.mask_logits = CountingModel::square(1, at);
    return o;
  }
  TrackerOutput propagate(const TrackerStateView& st, int f, bool) override {
    SEGMUX_CHECK(held_.count(f), "propagate on frame ", f, " without its features");
    m_.state_objects[st.state_id] = st.obj_ids;
    const int64_t n = int64_t(st.obj_ids.size());
    // Every object keeps the square of the concept whose state this is (states are per concept).
    const int at = m_.text_of_state.count(st.state_id) ? CountingModel::offset(m_.text_of_state[st.state_id]) : 1;
    return {CountingModel::square(n, at), Tensor::from_vector<float>({n}, std::vector<float>(size_t(n), 5.f))};
  }
  void encode_memory(const TrackerStateView&, int, const Tensor&, const Tensor&) override {}
  void add_masks(const TrackerStateView& st, int, const std::vector<int64_t>&, const Tensor&, MaskInputKind,
                 bool) override {
    m_.text_of_state[st.state_id] = m_.current.at(0);
  }
  void remove_objects(const TrackerStateView&, const std::vector<int64_t>&) override {}
  void drop_state(int s) override { m_.dropped.push_back(s); }

 private:
  void encode(const std::vector<std::string>& text) {
    if (!encoded_.insert(text).second) return;
    ++m_.text_encodings;
    m_.encode_order.push_back("text " + text.at(0));
  }
  CountingModel& m_;
  std::set<int> held_;
  std::set<std::vector<std::string>> encoded_;
};

std::unique_ptr<ModelSession> CountingModel::new_session() { return std::make_unique<CountingSession>(*this); }

ControlConfig small_config() {
  ControlConfig c;
  c.bucket_capacity = 4;
  c.multiplex_count = 4;
  c.max_num_objects = 8;
  return c;
}

}  // namespace

// The text encoder runs before the prompt frame's backbone, so that its weights are not resident beside
// the backbone's (peak RSS at full size); a later concept's text is encoded once, before its detection.
TEST(Concepts, TextIsEncodedBeforeThePromptFramesBackbone) {
  CountingModel be;
  auto src = make_blank_frame_source(6, kVideo, kVideo);
  auto session = be.new_session();
  ConceptSet set(*session, *src, small_config());
  set.add_text_prompt(2, "dog");
  set.add_text_prompt(2, "cat");
  EXPECT_EQ(be.encode_order, (std::vector<std::string>{"text dog", "backbone 2", "text cat"}));
  EXPECT_EQ(be.text_encodings, 2);
}

TEST(Concepts, TwoConceptsShareTheBackboneAndGetDistinctIds) {
  CountingModel be;
  auto src = make_blank_frame_source(6, kVideo, kVideo);
  auto session = be.new_session();
  ConceptSet set(*session, *src, small_config());
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
  EXPECT_EQ(be.text_encodings, 2) << "each concept's text encoded once in the session, then kept";
  EXPECT_EQ(set.prompt_of(1), std::optional<std::string>("cat"));
  EXPECT_EQ(set.object_ids(), (std::vector<int64_t>{0, 1}));
  // Tracker states of different concepts never share an id in the session.
  EXPECT_EQ(be.state_objects.size(), 2u);
}

TEST(Concepts, RemoveRestartResetAndThreshold) {
  CountingModel be;
  auto src = make_blank_frame_source(4, kVideo, kVideo);
  auto session = be.new_session();
  ConceptSet set(*session, *src, small_config());
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
  CountingModel be;
  auto video = make_blank_frame_source(40, kVideo, kVideo);
  VideoSession session(be, *video, small_config());
  session.add_prompt(0, Prompt::from_text("dog"));
  session.add_prompt(0, Prompt::from_text("cat"));
  int delivered = 0;
  session.propagate({PropagationDirection::Forward, 0, std::nullopt}, [&](const FrameOutput&) {
    if (++delivered == 1) session.cancel();  // as another thread would
    return true;
  });
  EXPECT_LT(be.backbone_runs.size(), 40u) << "cancel_propagation stops the run";
  EXPECT_THROW(session.remove_object(0, 40), Error);  // frame out of range
  auto before = session.frame_outputs(3);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->obj_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(session.frame_outputs(39).has_value()) << "not propagated";
  EXPECT_TRUE(session.remove_object(0, 3));
  // The official remove_object response: the frame's outputs without the object.
  EXPECT_EQ(session.frame_outputs(3)->obj_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(session.frame_outputs(3)->prompts, (std::vector<std::string>{"cat"}));
  EXPECT_FALSE(session.remove_object(0, 3));
}

namespace {

using A = PropagationAction;
using T = PropagationAction::Type;

T plan(const std::vector<A>& history, std::vector<int64_t>* ids = nullptr) {
  std::vector<int64_t> got;
  const T t = plan_propagation(history, 16, got);
  if (ids) *ids = got;
  return t;
}

}  // namespace

// The official parse_action_history_for_propagation, case by case (sam3_multiplex_tracking.py).
TEST(ActionHistory, PicksTheOfficialPropagation) {
  EXPECT_EQ(plan({}), T::Full);  // the first propagation
  // One direction ran without a start frame: the other one runs the same way, then it is a fetch.
  EXPECT_EQ(plan({{T::Full, std::nullopt, {}}}), T::Full);
  EXPECT_EQ(plan({{T::Full, std::nullopt, {}}, {T::Full, std::nullopt, {}}}), T::Fetch);
  // Started at the first or last frame: one run covers the video, the next one fetches.
  EXPECT_EQ(plan({{T::Full, 0, {}}}), T::Fetch);
  EXPECT_EQ(plan({{T::Full, 15, {}}}), T::Fetch);
  EXPECT_EQ(plan({{T::Full, 7, {}}}), T::Full);
  // Removals alone: fetch (the kept outputs without the object), also of an object hot start removed.
  EXPECT_EQ(plan({{T::Full, std::nullopt, {}}, {T::Remove, std::nullopt, {4}}}), T::Fetch);
  EXPECT_EQ(plan({{T::Remove, std::nullopt, {4}}}), T::Fetch);
  EXPECT_EQ(plan({{T::Full, 3, {}}, {T::Fetch, std::nullopt, {}}}), T::Fetch);
  // Points since the last propagation: partial for those objects (a removal among them changes nothing).
  std::vector<int64_t> ids;
  EXPECT_EQ(plan({{T::Full, std::nullopt, {}},
                  {T::Refine, 6, {2}},
                  {T::Remove, std::nullopt, {0}},
                  {T::Add, 6, {0}},
                  {T::Refine, 6, {2}}},
                 &ids),
            T::Partial);
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(plan({{T::Full, std::nullopt, {}}, {T::Add, 6, {0}}, {T::Partial, std::nullopt, {0}}}, &ids), T::Partial);
  EXPECT_EQ(ids, (std::vector<int64_t>{0}));
  EXPECT_EQ(plan({{T::Add, 6, {0}}, {T::Partial, std::nullopt, {0}}, {T::Partial, std::nullopt, {0}}}), T::Fetch);
  // A cancel repeats the propagation it stopped (a fetch right before it skipped).
  EXPECT_EQ(plan({{T::Cancel, std::nullopt, {}}}), T::Full);
  EXPECT_EQ(plan({{T::Add, 6, {1}}, {T::Partial, 0, {1}}, {T::Cancel, std::nullopt, {}}}, &ids), T::Partial);
  EXPECT_EQ(ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(plan({{T::Full, 4, {}}, {T::Fetch, std::nullopt, {}}, {T::Cancel, std::nullopt, {}}}), T::Full);
}

// After remove_object the official propagation only fetches the kept outputs (nothing runs, the object
// is gone from every frame); a second full run happens only where the official runs one.
TEST(ActionHistory, PropagationAfterARemovalFetchesTheKeptOutputs) {
  CountingModel be;
  auto src = make_blank_frame_source(6, kVideo, kVideo);
  auto session = be.new_session();
  ConceptSet set(*session, *src, small_config());
  set.keep_outputs(true);
  set.add_text_prompt(0, "dog");
  set.add_text_prompt(0, "cat");
  auto run = [&](int start, bool reverse) {
    std::vector<FrameOutput> outs;
    EXPECT_TRUE(set.propagate(start, -1, reverse, [&](FrameOutput o) {
      outs.push_back(std::move(o));
      return true;
    }));
    return outs;
  };
  EXPECT_EQ(run(-1, false).size(), 6u);
  EXPECT_EQ(be.backbone_runs[3], 1);
  EXPECT_TRUE(set.remove_object(1));
  const std::vector<FrameOutput> fetched = run(-1, false);
  ASSERT_EQ(fetched.size(), 6u);
  EXPECT_EQ(be.backbone_runs[3], 1) << "a fetch runs no model";
  for (const FrameOutput& f : fetched) {
    EXPECT_EQ(std::count(f.obj_ids.begin(), f.obj_ids.end(), 1), 0) << "frame " << f.frame_index;
    EXPECT_EQ(f.obj_ids, set.frame_outputs(f.frame_index)->obj_ids);
  }
  EXPECT_TRUE(run(-1, true).empty());  // backward from frame 0: nothing to fetch
  EXPECT_EQ(be.backbone_runs[3], 1);
  // A new text prompt starts the history over: the next propagation runs again.
  set.add_text_prompt(0, "cat");
  run(-1, false);
  EXPECT_EQ(be.backbone_runs[3], 2);
}

// Official add_prompt: boxes go to the detector as a visual prompt even with an obj_id (unused there);
// only points (or segmux's object_box extension) prompt the tracker for that object.
TEST(Concepts, BoxesWithAnObjIdAreTheDetectorsVisualPrompt) {
  CountingModel be;
  auto video = make_blank_frame_source(4, kVideo, kVideo);
  VideoSession session(be, *video, small_config());
  Prompt p;
  p.obj_id = 7;
  p.boxes_xywh = {{0.1f, 0.1f, 0.2f, 0.2f}};
  p.box_labels = {1};
  const FrameOutput out = session.add_prompt(0, p);
  EXPECT_EQ(out.obj_ids, (std::vector<int64_t>{0})) << "the detector's object, numbered by the session";
  EXPECT_EQ(out.prompts, (std::vector<std::string>{"<text placeholder>"}));
  EXPECT_EQ(be.box_exemplars, 1u);
  Prompt clicks_and_boxes = p;
  clicks_and_boxes.points_xy = {{0.5f, 0.5f}};
  clicks_and_boxes.point_labels = {1};
  EXPECT_THROW(session.add_prompt(0, clicks_and_boxes), Error);  // official: points exclude boxes
}
