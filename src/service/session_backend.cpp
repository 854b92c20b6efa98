#include "service/session_backend.h"

namespace segmux::service {

using namespace segmux::pipeline;

SessionBackend::~SessionBackend() {
  try {
    reset();
  } catch (...) {  // a destructor must not throw; the backend forgets nothing it still needs
  }
  if (shared_.text_owner_ == this) shared_.text_owner_ = nullptr;
}

void SessionBackend::own_text() {
  if (shared_.text_owner_ == this || text_.empty()) return;
  shared_.real_.encode_text(text_);  // the backend caches encodings: a switch back is cheap
  shared_.text_owner_ = this;
}

void SessionBackend::own_frame(int frame_index) {
  auto owner = shared_.frame_owner_.find(frame_index);
  if (owner != shared_.frame_owner_.end() && owner->second == this) return;
  auto mine = frames_.find(frame_index);
  SEGMUX_CHECK(mine != frames_.end(), "frame ", frame_index, " has no backbone features in this session");
  // Another session's features sit under this index: the backend keeps the first entry, so drop it.
  if (owner != shared_.frame_owner_.end()) shared_.real_.release_frame(frame_index);
  shared_.real_.run_backbone(frame_index, mine->second);
  shared_.frame_owner_[frame_index] = this;
}

void SessionBackend::encode_text(const std::vector<std::string>& batch) {
  text_ = batch;
  shared_.real_.encode_text(batch);
  shared_.text_owner_ = this;
}

void SessionBackend::run_backbone(int frame_index, const RgbFrame& frame) {
  frames_[frame_index] = frame;
  auto owner = shared_.frame_owner_.find(frame_index);
  if (owner != shared_.frame_owner_.end() && owner->second != this) shared_.real_.release_frame(frame_index);
  if (owner == shared_.frame_owner_.end() || owner->second != this) {
    shared_.real_.run_backbone(frame_index, frame);
    shared_.frame_owner_[frame_index] = this;
  }
}

void SessionBackend::release_frame(int frame_index) {
  frames_.erase(frame_index);
  auto owner = shared_.frame_owner_.find(frame_index);
  if (owner != shared_.frame_owner_.end() && owner->second == this) {
    shared_.real_.release_frame(frame_index);
    shared_.frame_owner_.erase(owner);
  }
}

DetectorOutput SessionBackend::detect(int frame_index) {
  own_text();
  own_frame(frame_index);
  return pipeline::detect_with_exemplars(shared_.real_, frame_index, boxes_);
}

TrackerOutput SessionBackend::propagate(const TrackerStateView& state, int frame_index, bool reverse) {
  own_frame(frame_index);
  return shared_.real_.propagate(global(state), frame_index, reverse);
}

void SessionBackend::encode_memory(const TrackerStateView& state, int frame_index, const Tensor& masks,
                                   const Tensor& scores) {
  own_frame(frame_index);
  shared_.real_.encode_memory(global(state), frame_index, masks, scores);
}

void SessionBackend::add_masks(const TrackerStateView& state, int frame_index, const std::vector<int64_t>& obj_ids,
                               const Tensor& masks, MaskInputKind kind, bool conditioning) {
  own_frame(frame_index);
  shared_.real_.add_masks(global(state), frame_index, obj_ids, masks, kind, conditioning);
}

TrackerOutput SessionBackend::add_points(const TrackerStateView& state, int frame_index, int64_t obj_id,
                                         const PointInputs& points, bool conditioning) {
  own_frame(frame_index);
  return shared_.real_.add_points(global(state), frame_index, obj_id, points, conditioning);
}

void SessionBackend::remove_objects(const TrackerStateView& state, const std::vector<int64_t>& removed) {
  shared_.real_.remove_objects(global(state), removed);
}

void SessionBackend::drop_state(int state_id) {
  auto it = state_ids_.find(state_id);
  if (it == state_ids_.end()) return;
  shared_.real_.drop_state(it->second);
  state_ids_.erase(it);
}

void SessionBackend::reset() {
  while (!state_ids_.empty()) drop_state(state_ids_.begin()->first);
  while (!frames_.empty()) release_frame(frames_.begin()->first);
  text_.clear();
  boxes_.clear();
}

TrackerStateView SessionBackend::global(const TrackerStateView& state) {
  auto [it, added] = state_ids_.try_emplace(state.state_id, shared_.next_state_);
  if (added) ++shared_.next_state_;
  TrackerStateView v = state;
  v.state_id = it->second;
  return v;
}

}  // namespace segmux::service
