#include "pipeline/predictor/control_plane.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "pipeline/predictor/control_plane_frame.h"

namespace segmux::pipeline {

const char* phase_name(FramePhase phase) {
  switch (phase) {
    case FramePhase::AddPrompt:
      return "add_prompt";
    case FramePhase::Propagate:
      return "propagate";
  }
  return "unknown";
}

VideoControlPlane::VideoControlPlane(ModelSession& model, FrameSource& frames, ControlConfig config)
    : model_(model), frames_(frames), cfg_(config), geo_(model.geometry()) {
  SEGMUX_CHECK(geo_.low_res_mask_size > 0 && geo_.input_mask_size > 0, "the model reports mask sizes ",
               geo_.low_res_mask_size, " / ", geo_.input_mask_size);
  validate_control_config(cfg_, "control config");
}

void VideoControlPlane::reset() {
  prompt_.reset();
  prompted_frames_.clear();
  for (const auto& s : states_) model_.drop_state(s.id);
  states_.clear();
  obj_ids_.clear();
  max_obj_id_ = -1;
  obj_id_to_score_.clear();
  meta_ = HotstartMetadata{};
  for (int f : cached_frames_) model_.release_frame(f);
  cached_frames_.clear();
  points_.clear();
  user_masks_.clear();
  user_objects_.clear();
}

TrackerStateView VideoControlPlane::view(const TrackerState& s) const {
  TrackerStateView v;
  v.state_id = s.id;
  v.obj_ids = s.obj_ids;
  v.obj_ids.insert(v.obj_ids.end(), s.extra_slots.begin(), s.extra_slots.end());
  v.buckets = s.buckets.slots();
  v.bucket_ids = s.buckets.bucket_ids();
  for (const auto& [f, m] : s.memory) v.memory_frames.push_back(m);
  v.num_frames = frames_.num_frames();
  return v;
}

std::vector<TrackerStateView> VideoControlPlane::tracker_state_views() const {
  std::vector<TrackerStateView> out;
  for (const auto& s : states_) out.push_back(view(s));
  return out;
}

void VideoControlPlane::ensure_frame_features(int frame_index) {
  SEGMUX_CHECK(frame_index >= 0 && frame_index < frames_.num_frames(), "frame ", frame_index,
               " is out of range for a video of ", frames_.num_frames(), " frames");
  // Bounded cache: only the frame being processed keeps backbone features (tracker memories keep
  // their own copy of image features), so at most one frame's features live at a time. The concepts
  // of a video share its session and take turns on each frame: a frame another concept let go of
  // since is run again.
  for (auto it = cached_frames_.begin(); it != cached_frames_.end();) {
    if (*it != frame_index) {
      model_.release_frame(*it);
      it = cached_frames_.erase(it);
    } else {
      ++it;
    }
  }
  if (!model_.has_frame(frame_index)) {
    RgbFrame rgb = frames_.frame(frame_index);
    SEGMUX_CHECK(rgb.width == frames_.width() && rgb.height == frames_.height() &&
                     rgb.pixels.size() == size_t(rgb.width) * size_t(rgb.height) * 3,
                 "frame ", frame_index, " is ", rgb.width, "x", rgb.height, " with ", rgb.pixels.size(),
                 " bytes; the video is ", frames_.width(), "x", frames_.height());
    model_.run_backbone(frame_index, rgb);
  }
  cached_frames_.insert(frame_index);
}

FrameOutput VideoControlPlane::add_text_prompt(int frame_index, const std::string& text,
                                               const std::vector<sam31::BoxExemplar>& boxes) {
  SEGMUX_CHECK(frame_index >= 0 && frame_index < frames_.num_frames(), "add_prompt: frame ", frame_index,
               " is out of range for a video of ", frames_.num_frames(), " frames");
  reset();  // a text prompt starts this concept over (official add_prompt -> reset_state)
  prompt_ = text;
  prompted_frames_.insert(frame_index);
  model_.prepare_text(text_batch());  // before this frame's backbone: see ModelSession::prepare_text
  // The boxes (official per_frame_geometric_prompt) act on this add_prompt only: the official
  // propagation's batched grounding takes its geometric prompts from the input batch's find_inputs,
  // which add_prompt's boxes never reach, so every propagated frame (this one again included) is
  // detected with the text alone.
  PendingFrame pending = process_frame(frame_index, false, FramePhase::AddPrompt, boxes);
  return postprocess(pending, {});
}

bool VideoControlPlane::remove_object(int64_t obj_id) {
  auto it = std::find(obj_ids_.begin(), obj_ids_.end(), obj_id);
  if (it == obj_ids_.end()) return false;
  size_t pos = size_t(it - obj_ids_.begin());
  remove_from_states({obj_id});
  obj_ids_.erase(it);
  auto erase_at = [pos](auto& v) {
    if (pos < v.size()) v.erase(v.begin() + long(pos));
  };
  erase_at(meta_.obj_first_frame);
  erase_at(meta_.consecutive_unmatch_count);
  erase_at(meta_.trk_keep_alive);
  erase_at(meta_.last_occluded);
  erase_at(meta_.confirmation_status);
  erase_at(meta_.consecutive_det_num);
  const size_t n = obj_ids_.size() + 1;
  if (meta_.overlap_pair_counts.size() == n * n) {
    std::vector<int64_t> m;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (i != pos && j != pos) m.push_back(meta_.overlap_pair_counts[i * n + j]);
    meta_.overlap_pair_counts = std::move(m);
  }
  obj_id_to_score_.erase(obj_id);
  user_objects_.erase(obj_id);
  std::erase_if(points_, [obj_id](const auto& kv) { return kv.first.first == obj_id; });
  std::erase_if(user_masks_, [obj_id](const auto& key) { return key.first == obj_id; });
  return true;
}

void VideoControlPlane::remove_from_states(const std::vector<int64_t>& ids) {
  std::vector<TrackerState> kept;
  for (auto& s : states_) {
    std::vector<int> idx;
    std::vector<int64_t> removed;
    for (size_t i = 0; i < s.obj_ids.size(); ++i)
      if (std::find(ids.begin(), ids.end(), s.obj_ids[i]) != ids.end()) {
        idx.push_back(int(i));
        removed.push_back(s.obj_ids[i]);
      }
    // An object's appended entries go with it (they belong to no other object).
    for (size_t k = 0; k < s.extra_slots.size(); ++k)
      if (std::find(ids.begin(), ids.end(), s.extra_slots[k]) != ids.end()) idx.push_back(int(s.obj_ids.size() + k));
    if (idx.empty()) {
      kept.push_back(std::move(s));
      continue;
    }
    if (removed.size() == s.obj_ids.size()) {  // nothing left: the state goes away
      model_.drop_state(s.id);
      continue;
    }
    s.remove_objects(idx, removed);
    model_.remove_objects(view(s), removed);
    kept.push_back(std::move(s));
  }
  states_ = std::move(kept);
}

void VideoControlPlane::TrackerState::remove_objects(const std::vector<int>& indices,
                                                     const std::vector<int64_t>& removed) {
  buckets.remove_objects(indices);
  std::vector<int64_t> remaining;
  for (int64_t id : obj_ids)
    if (std::find(removed.begin(), removed.end(), id) == removed.end()) remaining.push_back(id);
  obj_ids = remaining;
  std::erase_if(extra_slots,
                [&](int64_t id) { return std::find(removed.begin(), removed.end(), id) != removed.end(); });
  output_entries.clear();  // the official removal slices every stored output
  // Clear the removed objects' mask inputs; a conditioning frame without inputs left is downgraded
  // to an ordinary memory frame (official clear_all_points_in_frame).
  bool any_cond = false;
  for (auto& [f, m] : memory) {
    std::vector<int64_t> in;
    for (int64_t id : m.input_obj_ids)
      if (std::find(removed.begin(), removed.end(), id) == removed.end()) in.push_back(id);
    m.input_obj_ids = in;
    if (m.conditioning && in.empty()) m.conditioning = false;
    any_cond = any_cond || m.conditioning;
  }
  // The official tracker raises "No points are provided" on the next propagation when a state has
  // no conditioning frame left (objects added to an existing state later are stored as
  // non-conditioning inputs). Instead, the frames where the remaining objects received their mask
  // inputs become conditioning frames, so those objects keep being tracked.
  if (!any_cond)
    for (auto& [f, m] : memory)
      if (!m.input_obj_ids.empty()) m.conditioning = true;
}

void VideoControlPlane::add_new_objects(int frame_index, const std::vector<int64_t>& ids, const MaskStack& det_masks) {
  const int n = int(ids.size());
  // Best fit: the existing state with the fewest free slots that still holds all new objects.
  TrackerState* target = nullptr;
  int best = 1 << 30;
  for (auto& s : states_) {
    int avail = s.buckets.available_slots();
    if (avail >= n && avail < best) {
      best = avail;
      target = &s;
    }
  }
  if (target) {
    target->buckets.add_objects(n, false);
    target->obj_ids.insert(target->obj_ids.end(), ids.begin(), ids.end());
  } else {
    TrackerState s;
    s.id = model_.new_state_id();
    s.obj_ids = ids;
    s.buckets = MultiplexBuckets(n, cfg_.bucket_capacity, cfg_.multiplex_count);
    states_.push_back(std::move(s));
    target = &states_.back();
  }
  Tensor inputs = mask_inputs(det_masks, geo_.input_mask_size);
  const bool conditioning = target->note_mask_inputs(frame_index, ids);
  model_.add_masks(view(*target), frame_index, ids, inputs, MaskInputKind::NewObjects, conditioning);
  target->tracked_frames.insert(frame_index);
  target->output_entries[frame_index] = target->num_entries();
}

bool VideoControlPlane::TrackerState::note_mask_inputs(int frame_index, const std::vector<int64_t>& ids) {
  const bool conditioning = !tracked_frames.count(frame_index);
  // Listed once each (only reconditioning can name an object again: new objects' ids are fresh).
  MemoryFrame& mf = memory[frame_index];
  mf.frame_index = frame_index;
  mf.conditioning = mf.conditioning || conditioning;
  for (int64_t id : ids)
    if (std::find(mf.input_obj_ids.begin(), mf.input_obj_ids.end(), id) == mf.input_obj_ids.end())
      mf.input_obj_ids.push_back(id);
  return conditioning;
}

FrameOutput VideoControlPlane::postprocess(const PendingFrame& f, const std::set<int64_t>& hidden) const {
  FrameOutput out;
  out.frame_index = f.frame_index;
  out.stats = f.stats;
  const int H = frames_.height(), W = frames_.width();
  std::vector<float> sam2;
  for (int64_t id : f.obj_ids) {
    if (hidden.count(id) || std::find(f.suppressed.begin(), f.suppressed.end(), id) != f.suppressed.end()) continue;
    BinaryMask m = rle_decode(f.masks.at(id));
    if (m.area() == 0) continue;
    out.pre_overlap_masks.push_back(f.masks.at(id));
    auto box = mask_to_box_xyxy(m);  // boxes come from masks before the non-overlap step
    out.obj_ids.push_back(id);
    auto sc = f.scores.find(id);
    out.probs.push_back(sc == f.scores.end() ? 0.f : sc->second);
    auto s2 = f.sam2_scores.find(id);
    sam2.push_back(s2 == f.sam2_scores.end() ? 0.f : s2->second);
    out.boxes_xywh.push_back(
        {box[0] / float(W), box[1] / float(H), (box[2] - box[0]) / float(W), (box[3] - box[1]) / float(H)});
    out.masks.push_back(std::move(m));
  }
  object_wise_non_overlap(out.masks, sam2);
  out.overlap_probs = std::move(sam2);
  return out;
}

namespace {
// Frames in processing order (official propagate_in_video): forward from start_frame, reverse from
// start_frame - 1, max_frames further at most.
std::vector<int> propagation_order(int start_frame, int max_frames, bool reverse, int num_frames) {
  std::vector<int> order;
  if (reverse) {
    const int end_frame = std::max(start_frame - max_frames, 0);
    for (int f = start_frame - 1; f >= end_frame; --f) order.push_back(f);
  } else {
    const int end_frame = std::min(start_frame + max_frames, num_frames - 1);
    for (int f = start_frame; f <= end_frame; ++f) order.push_back(f);
  }
  return order;
}
}  // namespace

// The outputs of one propagate() call on their way to the sink: held back hotstart_delay frames (all
// released at the last frame), then post-processed in batches of postprocess_batch_size, each hiding
// the objects still unconfirmed `delay` frames later and, if configured, those removed by the time
// the frame was released.
class VideoControlPlane::OutputQueue {
 public:
  OutputQueue(const VideoControlPlane& cp, bool reverse, const std::function<bool(FrameOutput)>& sink)
      : cp_(cp), cfg_(cp.cfg_), reverse_(reverse), sink_(sink) {}
  bool stopped() const { return stop_; }
  void set_unconfirmed(int frame, std::vector<int64_t> ids) { unconfirmed_[frame] = std::move(ids); }
  void add_removed(const std::vector<int64_t>& ids) { removed_so_far_.insert(ids.begin(), ids.end()); }
  void add(PendingFrame frame, bool last_frame);
  // Releases every output still held (an open run's hot-start queue too) and flushes them.
  void finish() {
    if (stop_) return;
    for (auto& h : hot_) post_.emplace_back(std::move(h), removed_so_far_);
    hot_.clear();
    flush(post_.size());
  }

 private:
  void flush(size_t count);

  const VideoControlPlane& cp_;
  const ControlConfig& cfg_;
  const bool reverse_;
  const std::function<bool(FrameOutput)>& sink_;
  std::map<int, std::vector<int64_t>> unconfirmed_;  // per propagation call, as officially
  std::set<int64_t> removed_so_far_;
  std::vector<PendingFrame> hot_;                                 // held back for hot start
  std::vector<std::pair<PendingFrame, std::set<int64_t>>> post_;  // released, with the removals then
  bool stop_ = false;
};

void VideoControlPlane::OutputQueue::add(PendingFrame frame, bool last_frame) {
  std::vector<PendingFrame> ready;
  if (cfg_.hotstart_delay > 0) {
    hot_.push_back(std::move(frame));
    if (last_frame) {
      ready = std::move(hot_);
      hot_.clear();
    } else if (int(hot_.size()) >= cfg_.hotstart_delay) {
      ready.push_back(std::move(hot_.front()));
      hot_.erase(hot_.begin());
    }
  } else {
    ready.push_back(std::move(frame));
  }
  for (auto& r : ready) post_.emplace_back(std::move(r), removed_so_far_);
  while (int(post_.size()) >= cfg_.postprocess_batch_size && !stop_)
    flush(static_cast<size_t>(cfg_.postprocess_batch_size));
}

void VideoControlPlane::OutputQueue::flush(size_t count) {
  const int num_frames = cp_.frames_.num_frames();
  const int delay = cfg_.masklet_confirmation_consecutive_det_thresh - 1;
  for (size_t k = 0; k < count && !post_.empty(); ++k) {
    auto item = std::move(post_.front());
    post_.erase(post_.begin());
    std::set<int64_t> hidden = cfg_.hide_removed_objects_retroactively ? item.second : std::set<int64_t>{};
    int lookup = reverse_ ? item.first.frame_index - delay : item.first.frame_index + delay;
    lookup = std::clamp(lookup, 0, num_frames - 1);
    auto it = unconfirmed_.find(lookup);
    if (cfg_.masklet_confirmation_enable && it != unconfirmed_.end())
      hidden.insert(it->second.begin(), it->second.end());
    if (!stop_ && !sink_(cp_.postprocess(item.first, hidden))) stop_ = true;
  }
}

std::vector<int64_t> VideoControlPlane::unconfirmed_objects() const {
  std::vector<int64_t> ids;
  for (size_t k = 0; k < obj_ids_.size(); ++k)
    if (meta_.confirmation_status[k] == kUnconfirmed) ids.push_back(obj_ids_[k]);
  return ids;
}

class VideoControlPlane::PropagationRun : public Propagation {
 public:
  PropagationRun(VideoControlPlane& cp, std::vector<int> order, bool reverse, std::function<bool(FrameOutput)> sink,
                 bool open = false)
      : cp_(cp),
        order_(std::move(order)),
        reverse_(reverse),
        open_(open),
        sink_(std::move(sink)),
        queue_(cp, reverse, sink_) {}
  bool done() const override { return next_ >= order_.size() || queue_.stopped(); }
  void step() override {
    if (done()) return;
    const int frame = order_[next_++];
    PendingFrame pending = cp_.process_frame(frame, reverse_, FramePhase::Propagate);
    cp_.prompted_frames_.insert(frame);  // this frame now has outputs (official previous_stages_out)
    if (cp_.cfg_.masklet_confirmation_enable) queue_.set_unconfirmed(frame, cp_.unconfirmed_objects());
    queue_.add_removed(cp_.decisions_.back().obj_ids_newly_removed);
    queue_.add(std::move(pending), !open_ && frame == order_.back());  // an open run's last frame is unknown
  }
  void finish() override { queue_.finish(); }
  void extend_to(int last_frame) override {
    SEGMUX_CHECK(open_, "extend_to: not an open propagation");
    const int num_frames = cp_.frames_.num_frames();
    SEGMUX_CHECK(last_frame < num_frames, "propagate_in_video: frame ", last_frame, " is not there yet (", num_frames,
                 " frames)");
    for (int f = order_.empty() ? first_ : order_.back() + 1; f <= last_frame; ++f) order_.push_back(f);
  }
  void set_first(int frame) { first_ = frame; }

 private:
  VideoControlPlane& cp_;
  std::vector<int> order_;
  const bool reverse_;
  const bool open_;
  int first_ = 0;  // an open run's first frame
  const std::function<bool(FrameOutput)> sink_;
  OutputQueue queue_;
  size_t next_ = 0;
};

std::unique_ptr<VideoControlPlane::Propagation> VideoControlPlane::start_propagation(
    int start_frame, int max_frames, bool reverse, std::function<bool(FrameOutput)> sink) {
  SEGMUX_CHECK(prompt_.has_value() || !obj_ids_.empty(), "propagate_in_video: no prompt was added");
  const int num_frames = frames_.num_frames();
  if (start_frame < 0) start_frame = *prompted_frames_.begin();
  SEGMUX_CHECK(start_frame < num_frames, "propagate_in_video: start frame ", start_frame, " is out of range for ",
               num_frames, " frames");
  if (max_frames < 0) max_frames = num_frames;
  return std::make_unique<PropagationRun>(*this, propagation_order(start_frame, max_frames, reverse, num_frames),
                                          reverse, std::move(sink));
}

std::unique_ptr<VideoControlPlane::Propagation> VideoControlPlane::start_open_propagation(
    int start_frame, std::function<bool(FrameOutput)> sink) {
  SEGMUX_CHECK(prompt_.has_value() || !obj_ids_.empty(), "propagate_in_video: no prompt was added");
  if (start_frame < 0) start_frame = *prompted_frames_.begin();
  auto run = std::make_unique<PropagationRun>(*this, std::vector<int>{}, false, std::move(sink), true);
  run->set_first(start_frame);
  return run;
}

void VideoControlPlane::propagate(int start_frame, int max_frames, bool reverse,
                                  const std::function<bool(FrameOutput)>& sink) {
  auto run = start_propagation(start_frame, max_frames, reverse, sink);
  while (!run->done()) run->step();
  run->finish();
}

}  // namespace segmux::pipeline
