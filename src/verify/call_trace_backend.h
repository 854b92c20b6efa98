// A model session decorator that writes one JSON line per tracker call (propagate, encode_memory,
// add_masks, remove_objects) with what the control plane decided: frame, object ids, bucket slots,
// memory frames, per-object mask areas and object scores. `segmux parity --video DIR --trace-calls FILE`
// uses it; tools/fixtures/probe_calls.py writes the same fields from the official tracker, so the first
// call where the two runs part ways shows up in a diff (held-out traces have no per-frame fixtures).
#pragma once
#include <memory>
#include <ostream>

#include "pipeline/backends/model.h"

namespace segmux::verify {

class CallTraceSession : public pipeline::ModelSession {
 public:
  CallTraceSession(std::unique_ptr<pipeline::ModelSession> inner, std::ostream& out)
      : inner_(std::move(inner)), out_(out) {}

  pipeline::ModelGeometry geometry() const override { return inner_->geometry(); }
  void run_backbone(int frame, const pipeline::RgbFrame& rgb) override { inner_->run_backbone(frame, rgb); }
  void run_backbone_input(int frame, const Tensor& image, int w, int h) override {
    inner_->run_backbone_input(frame, image, w, h);
  }
  bool has_frame(int frame) const override { return inner_->has_frame(frame); }
  void release_frame(int frame) override { inner_->release_frame(frame); }
  pipeline::DetectorOutput detect(int frame, const std::vector<std::string>& text_batch,
                                  const std::vector<sam31::BoxExemplar>& exemplars) override {
    return inner_->detect(frame, text_batch, exemplars);
  }
  void prepare_text(const std::vector<std::string>& text_batch) override { inner_->prepare_text(text_batch); }
  pipeline::TrackerOutput propagate(const pipeline::TrackerStateView& state, int frame, bool reverse) override;
  void encode_memory(const pipeline::TrackerStateView& state, int frame, const Tensor& masks,
                     const Tensor& object_score_logits) override;
  void add_masks(const pipeline::TrackerStateView& state, int frame, const std::vector<int64_t>& obj_ids,
                 const Tensor& masks, pipeline::MaskInputKind kind, bool conditioning) override;
  pipeline::TrackerOutput add_points(const pipeline::TrackerStateView& state, int frame, int64_t obj_id,
                                     const pipeline::PointInputs& points, bool conditioning) override;
  void add_mask_prompt(const pipeline::TrackerStateView& state, int frame, int64_t obj_id, const Tensor& input_mask,
                       const Tensor& video_mask, bool conditioning) override;
  void relayout_refined_object(const pipeline::TrackerStateView& before, const pipeline::TrackerStateView& after,
                               int64_t obj_id) override;
  void extract_object(const pipeline::TrackerStateView& source, const pipeline::TrackerStateView& singleton,
                      int64_t obj_id) override;
  void remove_objects(const pipeline::TrackerStateView& state, const std::vector<int64_t>& removed) override;
  void drop_state(int state_id) override { inner_->drop_state(state_id); }

 private:
  std::unique_ptr<pipeline::ModelSession> inner_;
  std::ostream& out_;
};

// Every session of `inner` traced into `out` (the model and the stream outlive the sessions).
class CallTraceModel : public pipeline::Model {
 public:
  CallTraceModel(pipeline::Model& inner, std::ostream& out) : inner_(inner), out_(out) {}
  pipeline::ModelGeometry geometry() const override { return inner_.geometry(); }
  std::unique_ptr<pipeline::ModelSession> new_session() override {
    return std::make_unique<CallTraceSession>(inner_.new_session(), out_);
  }

 private:
  pipeline::Model& inner_;
  std::ostream& out_;
};

}  // namespace segmux::verify
