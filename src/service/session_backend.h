// One model backend shared by the sessions of a server. The backend keeps per-frame backbone features
// (keyed by frame index), the current text encoding and tracker states (keyed by state id): each
// session sees it through a SessionBackend that gives its states server-wide unique ids, selects its
// own text again before each detection when another session changed it, and runs the backbone on its
// own frame again when another session's frame of the same index took the slot. So sessions can
// interleave requests and each gets exactly the outputs it would get alone.
//
// Not thread-safe: the caller serialises every call on the shared backend (service.h holds one mutex
// for all model work).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/backends/backend.h"

namespace segmux::service {

class SharedModel {
 public:
  explicit SharedModel(pipeline::ModelBackend& real) : real_(real) {}
  pipeline::ModelBackend& real() { return real_; }

 private:
  friend class SessionBackend;
  pipeline::ModelBackend& real_;
  std::map<int, const void*> frame_owner_;  // frame index -> the session whose features are cached
  const void* text_owner_ = nullptr;        // the session whose text batch is encoded
  int next_state_ = 0;
};

class SessionBackend : public pipeline::ModelBackend {
 public:
  explicit SessionBackend(SharedModel& shared) : shared_(shared) {}
  ~SessionBackend() override;  // drops the session's states and frames

  pipeline::BackendGeometry geometry() const override { return shared_.real_.geometry(); }
  void encode_text(const std::vector<std::string>& batch) override;
  void run_backbone(int frame_index, const pipeline::RgbFrame& frame) override;
  void release_frame(int frame_index) override;
  pipeline::DetectorOutput detect(int frame_index) override;
  void set_box_exemplars(int frame_index, const std::vector<sam31::BoxExemplar>& boxes) override {
    pipeline::set_frame_exemplars(boxes_, frame_index, boxes);
  }
  pipeline::TrackerOutput propagate(const pipeline::TrackerStateView& state, int frame_index, bool reverse) override;
  void encode_memory(const pipeline::TrackerStateView& state, int frame_index, const Tensor& masks,
                     const Tensor& object_score_logits) override;
  void add_masks(const pipeline::TrackerStateView& state, int frame_index, const std::vector<int64_t>& obj_ids,
                 const Tensor& masks, pipeline::MaskInputKind kind, bool conditioning) override;
  pipeline::TrackerOutput add_points(const pipeline::TrackerStateView& state, int frame_index, int64_t obj_id,
                                     const pipeline::PointInputs& points, bool conditioning) override;
  void add_mask_prompt(const pipeline::TrackerStateView& state, int frame_index, int64_t obj_id,
                       const Tensor& input_mask, const Tensor& video_mask, bool conditioning) override {
    own_frame(frame_index);
    shared_.real_.add_mask_prompt(global(state), frame_index, obj_id, input_mask, video_mask, conditioning);
  }
  void relayout_refined_object(const pipeline::TrackerStateView& before, const pipeline::TrackerStateView& after,
                               int64_t obj_id) override {
    shared_.real_.relayout_refined_object(global(before), global(after), obj_id);
  }
  void extract_object(const pipeline::TrackerStateView& source, const pipeline::TrackerStateView& singleton,
                      int64_t obj_id) override {
    shared_.real_.extract_object(global(source), global(singleton), obj_id);
  }
  void remove_objects(const pipeline::TrackerStateView& state, const std::vector<int64_t>& removed) override;
  void drop_state(int state_id) override;
  void reset() override;  // this session's states, frames and text only

  size_t frames_held() const { return frames_.size(); }

 private:
  void own_text();
  void own_frame(int frame_index);
  pipeline::TrackerStateView global(const pipeline::TrackerStateView& state);

  SharedModel& shared_;
  std::vector<std::string> text_;
  std::map<int, pipeline::RgbFrame> frames_;  // frames this session holds features of (kept to re-run)
  std::map<int, int> state_ids_;              // session state id -> backend state id
  pipeline::FrameExemplars boxes_;            // this session's box exemplars by frame
};

}  // namespace segmux::service
