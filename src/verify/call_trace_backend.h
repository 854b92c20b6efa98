// A ModelBackend decorator that writes one JSON line per tracker call (propagate, encode_memory,
// add_masks, remove_objects) with what the control plane decided: frame, object ids, bucket slots,
// memory frames, per-object mask areas and object scores. `segmux parity --video DIR --trace-calls FILE`
// uses it; tools/fixtures/probe_calls.py writes the same fields from the official tracker, so the first
// call where the two runs part ways shows up in a diff (held-out traces have no per-frame fixtures).
#pragma once
#include <ostream>

#include "pipeline/backends/backend.h"

namespace segmux::verify {

class CallTraceBackend : public pipeline::ModelBackend {
 public:
  CallTraceBackend(pipeline::ModelBackend& inner, std::ostream& out) : inner_(inner), out_(out) {}

  pipeline::BackendGeometry geometry() const override { return inner_.geometry(); }
  void encode_text(const std::vector<std::string>& batch) override { inner_.encode_text(batch); }
  void run_backbone(int frame, const pipeline::RgbFrame& rgb) override { inner_.run_backbone(frame, rgb); }
  void release_frame(int frame) override { inner_.release_frame(frame); }
  void run_backbone_input(int frame, const Tensor& image, int w, int h) override {
    inner_.run_backbone_input(frame, image, w, h);
  }
  pipeline::DetectorOutput detect(int frame) override { return inner_.detect(frame); }
  void set_box_exemplars(int frame, const std::vector<sam31::BoxExemplar>& boxes) override {
    inner_.set_box_exemplars(frame, boxes);
  }
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
  void drop_state(int state_id) override { inner_.drop_state(state_id); }
  void reset() override { inner_.reset(); }

 private:
  pipeline::ModelBackend& inner_;
  std::ostream& out_;
};

}  // namespace segmux::verify
