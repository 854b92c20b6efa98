#include "pipeline/predictor/concepts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

// The last decoded frame, kept for the next concept that asks for the same frame.
class LastFrameCache : public FrameSource {
 public:
  explicit LastFrameCache(FrameSource& src) : src_(src) {}
  int num_frames() const override { return src_.num_frames(); }
  int width() const override { return src_.width(); }
  int height() const override { return src_.height(); }
  RgbFrame frame(int index) override {
    if (index != index_) {
      last_ = src_.frame(index);
      index_ = index;
    }
    return last_;
  }

 private:
  FrameSource& src_;
  int index_ = -1;
  RgbFrame last_;
};

// Drops object `obj_id`'s row from a frame's outputs (FrameOutput or a kept frame: the same columns;
// the overlap columns may be absent). Returns whether it was there.
template <class Rows>
bool erase_object_row(Rows& r, int64_t obj_id) {
  for (size_t i = 0; i < r.obj_ids.size(); ++i) {
    if (r.obj_ids[i] != obj_id) continue;
    const auto at = long(i);
    r.obj_ids.erase(r.obj_ids.begin() + at);
    r.probs.erase(r.probs.begin() + at);
    r.boxes_xywh.erase(r.boxes_xywh.begin() + at);
    r.masks.erase(r.masks.begin() + at);
    r.prompts.erase(r.prompts.begin() + at);
    if (r.overlap_probs.size() > i) r.overlap_probs.erase(r.overlap_probs.begin() + at);
    if (r.pre_overlap_masks.size() > i) r.pre_overlap_masks.erase(r.pre_overlap_masks.begin() + at);
    return true;
  }
  return false;
}

}  // namespace

PropagationAction::Type plan_propagation(const std::vector<PropagationAction>& history, int num_frames,
                                         std::vector<int64_t>& obj_ids) {
  using T = PropagationAction::Type;
  obj_ids.clear();
  auto is_run = [](T t) { return t == T::Full || t == T::Partial; };
  auto is_propagation = [&](T t) { return is_run(t) || t == T::Fetch || t == T::Cancel; };
  if (history.empty()) return T::Full;
  const PropagationAction& last = history.back();
  if (last.type == T::Cancel) {  // the propagation that was cancelled again (a fetch before it skipped)
    if (history.size() < 2) return T::Full;
    const PropagationAction* before = &history[history.size() - 2];
    if (before->type == T::Fetch) {
      if (history.size() < 3) return T::Full;
      before = &history[history.size() - 3];
    }
    if (!is_propagation(before->type) || before->type == T::Cancel) return T::Full;
    obj_ids = before->obj_ids;
    return before->type;
  }
  if (last.type == T::Fetch) return T::Fetch;
  if (is_run(last.type)) {
    const bool twice = history.size() > 1 && is_run(history[history.size() - 2].type);
    const bool from_end = last.frame_index && (*last.frame_index == 0 || *last.frame_index == num_frames - 1);
    if (twice || from_end) return T::Fetch;  // both directions have run
    obj_ids = last.obj_ids;                  // the other direction still to run
    return last.type;
  }
  std::set<int64_t> ids;  // user actions since the last propagation
  for (auto it = history.rbegin(); it != history.rend() && !is_propagation(it->type); ++it)
    if (it->type == T::Add || it->type == T::Refine) ids.insert(it->obj_ids.begin(), it->obj_ids.end());
  obj_ids.assign(ids.begin(), ids.end());
  return ids.empty() ? T::Fetch : T::Partial;
}

struct ConceptSet::Concept {
  std::string text;
  int prompt_frame = 0;
  std::optional<float> output_prob_thresh;
  std::unique_ptr<VideoControlPlane> control;
  std::deque<FrameOutput> ready;  // propagate(): this concept's outputs not yet merged
};

ConceptSet::ConceptSet(ModelSession& model, FrameSource& frames, ControlConfig config)
    : model_(model),
      frames_(frames),
      cfg_(config),
      cached_frames_(std::make_unique<LastFrameCache>(frames)),
      max_id_(std::make_shared<int64_t>(-1)) {}

ConceptSet::~ConceptSet() { open_.reset(); }

std::vector<std::string> ConceptSet::prompts() const {
  std::vector<std::string> out;
  for (const auto& c : concepts_) out.push_back(c->text);
  return out;
}

std::vector<int64_t> ConceptSet::object_ids() const {
  std::vector<int64_t> ids;
  for (const auto& c : concepts_) {
    auto v = c->control->object_ids();
    ids.insert(ids.end(), v.begin(), v.end());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<std::string> ConceptSet::prompt_of(int64_t obj_id) const {
  for (const auto& c : concepts_) {
    auto v = c->control->object_ids();
    if (std::find(v.begin(), v.end(), obj_id) != v.end()) return c->text;
  }
  return std::nullopt;
}

const std::vector<FrameDecisions>& ConceptSet::decisions() const {
  SEGMUX_CHECK(!concepts_.empty(), "no prompt was added");
  return concepts_.front()->control->decisions();
}

void ConceptSet::keep_decisions(bool keep) {
  keep_decisions_ = keep;
  for (auto& c : concepts_) c->control->keep_decisions(keep);
}

FrameOutput ConceptSet::labelled(const Concept& c, FrameOutput out) const {
  FrameOutput r;
  r.frame_index = out.frame_index;
  r.stats = out.stats;
  for (size_t k = 0; k < out.obj_ids.size(); ++k) {
    if (c.output_prob_thresh && !(out.probs[k] > *c.output_prob_thresh)) continue;
    r.obj_ids.push_back(out.obj_ids[k]);
    r.probs.push_back(out.probs[k]);
    r.boxes_xywh.push_back(out.boxes_xywh[k]);
    r.masks.push_back(std::move(out.masks[k]));
    r.prompts.push_back(c.text);
    if (out.overlap_probs.size() == out.obj_ids.size()) r.overlap_probs.push_back(out.overlap_probs[k]);
    if (out.pre_overlap_masks.size() == out.obj_ids.size()) r.pre_overlap_masks.push_back(out.pre_overlap_masks[k]);
  }
  return r;
}

ConceptSet::Concept& ConceptSet::concept_for(const std::string& text) {
  auto it = std::find_if(concepts_.begin(), concepts_.end(), [&](const auto& c) { return c->text == text; });
  if (it == concepts_.end()) {
    auto c = std::make_unique<Concept>();
    c->text = text;
    c->control = std::make_unique<VideoControlPlane>(model_, *cached_frames_, cfg_);
    c->control->share_object_ids(max_id_);
    c->control->keep_decisions(keep_decisions_);
    concepts_.push_back(std::move(c));
    it = std::prev(concepts_.end());
  }
  return **it;
}

FrameOutput ConceptSet::add_text_prompt(int frame_index, const std::string& text,
                                        std::optional<float> output_prob_thresh,
                                        const std::vector<sam31::BoxExemplar>& boxes) {
  SEGMUX_CHECK(!text.empty(), "add_prompt: the prompt has no text");
  SEGMUX_CHECK(!output_prob_thresh || (*output_prob_thresh >= 0.f && *output_prob_thresh < 1.f),
               "add_prompt: output_prob_thresh ", output_prob_thresh.value_or(0.f), " must be in [0, 1)");
  Concept& c = concept_for(text);
  propagated_ = false;  // a new or restarted concept needs a full propagation
  history_.clear();     // official: a semantic prompt starts the state (and its action history) over
  c.output_prob_thresh = output_prob_thresh;
  c.prompt_frame = frame_index;
  return labelled(c, c.control->add_text_prompt(frame_index, text, boxes));
}

std::vector<int> ConceptSet::processing_order(int start_frame, int max_frames, bool reverse) const {
  // Official _get_processing_order: by default from the earliest prompted frame over every frame;
  // backward starts one frame below the start.
  const int n = frames_.num_frames();
  if (start_frame < 0)
    for (const auto& c : concepts_)
      start_frame = start_frame < 0 ? c->prompt_frame : std::min(start_frame, c->prompt_frame);
  if (max_frames < 0) max_frames = n;
  std::vector<int> order;
  if (reverse)
    for (int f = start_frame - 1; f >= std::max(start_frame - max_frames, 0); --f) order.push_back(f);
  else
    for (int f = start_frame; f <= std::min(start_frame + max_frames, n - 1); ++f) order.push_back(f);
  return order;
}

bool ConceptSet::propagate(int start_frame, int max_frames, bool reverse,
                           const std::function<bool(FrameOutput)>& sink) {
  SEGMUX_CHECK(!concepts_.empty(), "propagate_in_video: no prompt was added");
  using T = PropagationAction::Type;
  cancel_ = false;
  std::vector<int64_t> ids;
  T kind = plan_propagation(history_, frames_.num_frames(), ids);
  const std::vector<int> order = processing_order(start_frame, max_frames, reverse);
  // Partial and fetch read the kept outputs of a full propagation: without them, run one. Concepts
  // without text (points or masks alone) have no detector outputs to keep: the official partial
  // propagation starts from the frames' cached answers of the prompts (propagate_partial).
  const bool text =
      std::any_of(concepts_.begin(), concepts_.end(), [](const auto& c) { return c->control->has_prompt(); });
  if (kind == T::Partial && !(keep_outputs_ && (propagated_ || !text))) kind = T::Full;
  if (kind == T::Fetch && !std::all_of(order.begin(), order.end(), [&](int f) { return kept_.count(f) > 0; }))
    kind = T::Full;
  history_.push_back({kind, start_frame < 0 ? std::nullopt : std::optional<int>(start_frame),
                      kind == T::Partial ? ids : std::vector<int64_t>{}});
  bool done = false;
  if (kind == T::Partial)
    done = propagate_partial(order, std::set<int64_t>(ids.begin(), ids.end()), reverse, sink);
  else if (kind == T::Fetch)
    done = propagate_fetch(order, sink);
  else
    done = propagate_full(start_frame, max_frames, reverse, sink);
  if (cancel_) history_.push_back({T::Cancel, std::nullopt, {}});
  return done;
}

// Every concept's full propagation over the same frames, one merged output per frame to the sink.
// An open run (live input) takes its frames as they arrive (extend_to) and lives across calls, so
// each call names its sink.
class ConceptSet::MergedRun {
 public:
  MergedRun(ConceptSet& set, int start_frame, int max_frames, bool reverse, bool open) : set_(set) {
    for (auto& c : set.concepts_) {
      c->ready.clear();
      Concept* cp = c.get();
      auto to_ready = [cp, this](FrameOutput out) {
        cp->ready.push_back(std::move(out));
        return !stopped_;
      };
      runs_.push_back(open ? c->control->start_open_propagation(start_frame, to_ready)
                           : c->control->start_propagation(start_frame, max_frames, reverse, to_ready));
    }
  }
  ~MergedRun() {
    for (auto& c : set_.concepts_) c->ready.clear();
  }
  void extend_to(int last_frame) {
    for (auto& r : runs_) r->extend_to(last_frame);
  }
  // Processes every frame the run has; false when stopped (by the sink or cancel()).
  bool step_all(const FrameSink& sink) {
    while (going() && std::any_of(runs_.begin(), runs_.end(), [](const auto& r) { return !r->done(); })) {
      for (auto& r : runs_) r->step();
      deliver(sink);
    }
    return going();
  }
  // Releases the outputs still held back (the end of the run).
  bool finish(const FrameSink& sink) {
    if (going()) {
      for (auto& r : runs_) r->finish();
      deliver(sink);
    }
    return going();
  }

 private:
  bool going() const { return !stopped_ && !set_.cancel_; }
  // Frames every concept has delivered go to the sink merged (all concepts run the same frames with
  // the same output delay, so they deliver the same frames in the same order).
  void deliver(const FrameSink& sink) {
    auto& concepts = set_.concepts_;
    while (!stopped_ &&
           std::all_of(concepts.begin(), concepts.end(), [](const auto& c) { return !c->ready.empty(); })) {
      const int frame_index = concepts.front()->ready.front().frame_index;
      std::vector<FrameOutput> parts;
      for (auto& c : concepts) {
        SEGMUX_CHECK(c->ready.front().frame_index == frame_index, "concepts delivered frames ", frame_index, " and ",
                     c->ready.front().frame_index, " together");
        parts.push_back(set_.labelled(*c, std::move(c->ready.front())));
        c->ready.pop_front();
      }
      FrameOutput merged = merge(std::move(parts));
      if (set_.keep_outputs_) set_.keep(merged);
      if (!sink(std::move(merged))) stopped_ = true;
    }
  }

  ConceptSet& set_;
  std::vector<std::unique_ptr<VideoControlPlane::Propagation>> runs_;
  bool stopped_ = false;
};

void ConceptSet::keep(const FrameOutput& merged) {
  KeptFrame& k = kept_[merged.frame_index];
  k = KeptFrame{merged.obj_ids, merged.probs, merged.boxes_xywh,    {},
                merged.prompts, merged.stats, merged.overlap_probs, merged.pre_overlap_masks};
  for (const auto& m : merged.masks) k.masks.push_back(rle_encode(m));
}

int ConceptSet::first_prompted_frame() const {
  int first = -1;
  for (const auto& c : concepts_) first = first < 0 ? c->prompt_frame : std::min(first, c->prompt_frame);
  return first;
}

bool ConceptSet::propagate_full(int start_frame, int max_frames, bool reverse, const FrameSink& sink) {
  propagated_ = true;
  // Every concept runs the same frames: by default from the earliest prompted frame.
  if (start_frame < 0) start_frame = first_prompted_frame();
  MergedRun run(*this, start_frame, max_frames, reverse, false);
  return run.step_all(sink) && run.finish(sink);
}

bool ConceptSet::propagate_open(int start_frame, int max_frames, const FrameSink& sink) {
  SEGMUX_CHECK(!concepts_.empty(), "propagate_in_video: no prompt was added");
  cancel_ = false;
  if (start_frame < 0) start_frame = open_ || open_stopped_ ? open_start_ : first_prompted_frame();
  if (open_ && start_frame != open_start_ && !close_open_run(sink)) return false;
  if (!open_) {
    // A run of the same start that the sink stopped goes on from where it stopped, as a new run.
    const int first = open_stopped_ && start_frame == open_start_ ? open_next_ : start_frame;
    history_.push_back({PropagationAction::Type::Full, first, {}});
    propagated_ = true;
    open_ = std::make_unique<MergedRun>(*this, first, -1, false, true);
    open_start_ = start_frame;
    open_next_ = first;
  }
  open_stopped_ = false;
  const int range_end = max_frames < 0 ? std::numeric_limits<int>::max() : start_frame + max_frames;
  const int last = std::min(num_frames() - 1, range_end);
  if (last >= open_next_) {
    open_->extend_to(last);
    open_next_ = last + 1;
    if (!open_->step_all(sink)) {
      open_.reset();  // stopped: its held outputs are dropped, as a stopped propagation's
      open_stopped_ = true;
      return false;
    }
  }
  return last < range_end || close_open_run(sink);  // the whole range tracked: the run ends
}

bool ConceptSet::close_open_run(const FrameSink& sink) {
  if (!open_) return true;
  std::unique_ptr<MergedRun> run = std::move(open_);
  return run->finish(sink);
}

void ConceptSet::forget_kept_before(int frame) { kept_.erase(kept_.begin(), kept_.lower_bound(frame)); }

FrameOutput ConceptSet::merge(std::vector<FrameOutput> parts) {
  FrameOutput merged;
  if (!parts.empty()) merged.frame_index = parts.front().frame_index;
  std::vector<std::pair<int64_t, std::pair<size_t, size_t>>> order;
  for (size_t p = 0; p < parts.size(); ++p) {
    merged.stats.num_obj_tracked += parts[p].stats.num_obj_tracked;
    merged.stats.num_obj_dropped += parts[p].stats.num_obj_dropped;
    for (size_t k = 0; k < parts[p].obj_ids.size(); ++k) order.push_back({parts[p].obj_ids[k], {p, k}});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [id, at] : order) {
    FrameOutput& f = parts[at.first];
    merged.obj_ids.push_back(id);
    merged.probs.push_back(f.probs[at.second]);
    merged.boxes_xywh.push_back(f.boxes_xywh[at.second]);
    merged.masks.push_back(std::move(f.masks[at.second]));
    merged.prompts.push_back(at.second < f.prompts.size() ? f.prompts[at.second] : std::string());
    if (f.overlap_probs.size() == f.obj_ids.size()) merged.overlap_probs.push_back(f.overlap_probs[at.second]);
    if (f.pre_overlap_masks.size() == f.obj_ids.size())
      merged.pre_overlap_masks.push_back(std::move(f.pre_overlap_masks[at.second]));
  }
  if (merged.overlap_probs.size() != merged.obj_ids.size()) merged.overlap_probs.clear();
  if (merged.pre_overlap_masks.size() != merged.obj_ids.size()) merged.pre_overlap_masks.clear();
  return merged;
}

bool ConceptSet::remove_object(int64_t obj_id) {
  // Gone from the kept outputs even when the tracker had dropped it already (hot start removed it, or
  // it left the video), as officially: a fetch or a later point prompt answers with a kept frame,
  // which must not bring it back.
  bool shown = false;
  for (auto& [f, k] : kept_) shown |= erase_object_row(k, obj_id);
  history_.push_back({PropagationAction::Type::Remove, std::nullopt, {obj_id}});
  for (auto& c : concepts_)
    if (c->control->remove_object(obj_id)) return true;
  return shown;
}

std::optional<FrameOutput> ConceptSet::frame_outputs(int frame_index) const {
  auto it = kept_.find(frame_index);
  if (it == kept_.end()) return std::nullopt;
  const KeptFrame& k = it->second;
  FrameOutput out;
  out.frame_index = frame_index;
  out.stats = k.stats;
  for (size_t i = 0; i < k.obj_ids.size(); ++i) {
    float prob = k.probs[i];
    for (const auto& c : concepts_)
      if (auto s = c->control->object_scores().find(k.obj_ids[i]); s != c->control->object_scores().end())
        prob = s->second;
    out.obj_ids.push_back(k.obj_ids[i]);
    out.probs.push_back(prob);
    out.boxes_xywh.push_back(k.boxes_xywh[i]);
    out.masks.push_back(rle_decode(k.masks[i]));
    out.prompts.push_back(k.prompts[i]);
  }
  if (k.overlap_probs.size() == k.obj_ids.size()) out.overlap_probs = k.overlap_probs;
  if (k.pre_overlap_masks.size() == k.obj_ids.size()) out.pre_overlap_masks = k.pre_overlap_masks;
  // Official: the cached masks from before the non-overlap step go through it again, so pixels of an
  // object removed since go back to the objects it overlapped (boxes are from those masks already).
  if (!out.pre_overlap_masks.empty() && !out.overlap_probs.empty()) {
    for (size_t i = 0; i < out.obj_ids.size(); ++i) out.masks[i] = rle_decode(out.pre_overlap_masks[i]);
    object_wise_non_overlap(out.masks, out.overlap_probs);
  }
  return out;
}

FrameOutput ConceptSet::add_point_prompt(int frame_index, int64_t obj_id, const PointInputs& points,
                                         bool clear_old_points) {
  return add_object_prompt(frame_index, obj_id, [&](VideoControlPlane& control) {
    return control.add_point_prompt(frame_index, obj_id, points, clear_old_points);
  });
}

FrameOutput ConceptSet::add_mask_prompt(int frame_index, int64_t obj_id, const Tensor& input_mask,
                                        const BinaryMask& video_mask) {
  return add_object_prompt(frame_index, obj_id, [&](VideoControlPlane& control) {
    return control.add_mask_prompt(frame_index, obj_id, input_mask, video_mask);
  });
}

FrameOutput ConceptSet::add_object_prompt(
    int frame_index, int64_t obj_id, const std::function<VideoControlPlane::PointResult(VideoControlPlane&)>& run) {
  Concept* c = nullptr;
  for (auto& k : concepts_)
    if (k->control->has_object(obj_id)) c = k.get();
  if (!c) c = concepts_.empty() ? &concept_for("") : concepts_.front().get();
  const bool first = !c->control->has_prompt() && c->control->object_ids().empty();
  const auto action = c->control->has_object(obj_id) ? PropagationAction::Type::Refine : PropagationAction::Type::Add;
  VideoControlPlane::PointResult r = run(*c->control);
  history_.push_back({action, frame_index, {obj_id}});  // after the run: a refused prompt is no action
  c->prompt_frame = first ? frame_index : std::min(c->prompt_frame, frame_index);
  // Official _build_sam2_output: on a frame without cached outputs (no prompt or propagation has
  // answered there yet) the answer is empty, whatever the object's new mask, and that empty answer is
  // cached; the next propagation shows the object (seen in tests/fixtures/sam31-tiny-masks).
  if (keep_outputs_ && !kept_.count(frame_index)) {
    kept_[frame_index] = KeptFrame{};
    FrameOutput none;
    none.frame_index = frame_index;
    return none;
  }
  // The frame's outputs as last kept, the object's entry replaced (dropped when its mask is empty).
  FrameOutput out = frame_outputs(frame_index).value_or(FrameOutput{});
  out.frame_index = frame_index;
  erase_object_row(out, obj_id);
  FrameOutput mine;
  mine.frame_index = frame_index;
  if (r.mask.area() > 0) {
    const auto box = mask_to_box_xyxy(r.mask);
    const float W = float(frames_.width()), H = float(frames_.height());
    mine.obj_ids = {obj_id};
    mine.probs = {r.prob};
    mine.boxes_xywh = {{box[0] / W, box[1] / H, (box[2] - box[0]) / W, (box[3] - box[1]) / H}};
    // Encoded before the move (a moved-from mask kept its size without pixels: never reached while the
    // fixture model's clicks found no object; a mask prompt always has pixels).
    mine.pre_overlap_masks = {rle_encode(r.mask)};
    mine.masks.push_back(std::move(r.mask));
    mine.prompts = {c->text};
    mine.overlap_probs = {r.prob};  // official: the clicked object's frame score is set to 1.0
  }
  std::vector<FrameOutput> parts;
  parts.push_back(std::move(out));
  parts.push_back(std::move(mine));
  FrameOutput merged = merge(std::move(parts));
  // The other objects of the frame enter the non-overlap step again from their masks before it
  // (official: the frame's cached outputs with the clicked object's new mask, post-processed again), so
  // pixels the clicked object no longer covers go back to them.
  if (merged.pre_overlap_masks.size() == merged.obj_ids.size() &&
      merged.overlap_probs.size() == merged.obj_ids.size()) {
    for (size_t i = 0; i < merged.obj_ids.size(); ++i) merged.masks[i] = rle_decode(merged.pre_overlap_masks[i]);
    object_wise_non_overlap(merged.masks, merged.overlap_probs);
  }
  if (keep_outputs_) keep(merged);
  return merged;
}

bool ConceptSet::propagate_fetch(const std::vector<int>& order, const std::function<bool(FrameOutput)>& sink) {
  for (int f : order) {
    if (cancel_) return false;
    if (!sink(*frame_outputs(f))) return false;
  }
  return true;
}

bool ConceptSet::propagate_partial(const std::vector<int>& order, const std::set<int64_t>& touched, bool reverse,
                                   const std::function<bool(FrameOutput)>& sink) {
  for (int f : order) {
    if (cancel_) return false;
    std::map<int64_t, VideoControlPlane::TrackedObject> fresh;
    std::map<int64_t, const Concept*> owner;
    for (auto& c : concepts_) {
      std::set<int64_t> mine;
      for (int64_t id : touched)
        if (c->control->has_object(id)) mine.insert(id);
      if (mine.empty()) continue;
      for (auto& [id, t] : c->control->track_objects(f, reverse, mine)) {
        fresh[id] = std::move(t);
        owner[id] = c.get();
      }
    }
    // The kept outputs of the frame with the prompted objects' new masks; the object-wise
    // non-overlap by tracker probability as officially (kept objects: their current score).
    // Official _build_sam2_output: a frame without cached outputs answers nothing (the tracker still ran
    // there: its memory is kept), e.g. every frame a points- or mask-only session has not answered yet.
    const bool cached = kept_.count(f) > 0;
    FrameOutput kept = frame_outputs(f).value_or(FrameOutput{});
    FrameOutput out;
    out.frame_index = f;
    out.stats = kept.stats;
    std::vector<std::pair<int64_t, size_t>> rows;  // (id, index in kept) or (id, npos) for fresh
    for (size_t i = 0; i < kept.obj_ids.size(); ++i)
      if (!touched.count(kept.obj_ids[i])) rows.push_back({kept.obj_ids[i], i});
    for (const auto& [id, t] : fresh)
      if (t.mask.area() > 0 && cached) rows.push_back({id, std::string::npos});
    std::sort(rows.begin(), rows.end());
    std::vector<float> tracker_probs;
    const float W = float(frames_.width()), H = float(frames_.height());
    for (const auto& [id, i] : rows) {
      out.obj_ids.push_back(id);
      if (i != std::string::npos) {
        out.probs.push_back(kept.probs[i]);
        out.boxes_xywh.push_back(kept.boxes_xywh[i]);
        // Kept objects enter the non-overlap step with their masks from before it (official
        // cached_frame_outputs), so pixels a refined object gives up return to them.
        const bool pre = kept.pre_overlap_masks.size() == kept.obj_ids.size();
        out.masks.push_back(pre ? rle_decode(kept.pre_overlap_masks[i]) : std::move(kept.masks[i]));
        out.prompts.push_back(kept.prompts[i]);
        // Kept objects rank by their score of that frame (official obj_id_to_sam2_score_frame_wise).
        tracker_probs.push_back(kept.overlap_probs.size() == kept.obj_ids.size() ? kept.overlap_probs[i]
                                                                                 : kept.probs[i]);
        continue;
      }
      VideoControlPlane::TrackedObject& t = fresh.at(id);
      const auto box = mask_to_box_xyxy(t.mask);
      const auto& scores = owner.at(id)->control->object_scores();
      out.probs.push_back(scores.count(id) ? scores.at(id) : 1.0f);
      out.boxes_xywh.push_back({box[0] / W, box[1] / H, (box[2] - box[0]) / W, (box[3] - box[1]) / H});
      out.masks.push_back(std::move(t.mask));
      out.prompts.push_back(owner.at(id)->text);
      // Official quirk: the interactive propagation stores the tracked objects' raw object-score logits
      // as their frame scores (the full propagation stores sigmoids), so they outrank kept objects.
      tracker_probs.push_back(t.score_logit);
    }
    std::vector<RleMask> pre_overlap;
    for (const auto& m : out.masks) pre_overlap.push_back(rle_encode(m));
    object_wise_non_overlap(out.masks, tracker_probs);
    KeptFrame& k = kept_[f];
    k = KeptFrame{out.obj_ids, out.probs, out.boxes_xywh, {},
                  out.prompts, out.stats, tracker_probs,  std::move(pre_overlap)};
    for (const auto& m : out.masks) k.masks.push_back(rle_encode(m));
    if (!sink(std::move(out))) return false;
  }
  return true;
}

void ConceptSet::reset() {
  open_.reset();
  open_stopped_ = false;
  for (auto& c : concepts_) c->control->reset();
  concepts_.clear();
  kept_.clear();
  history_.clear();
  propagated_ = false;
  *max_id_ = -1;
}

}  // namespace segmux::pipeline
