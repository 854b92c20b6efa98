// A ModelBackend that serves the raw per-frame model outputs recorded from the official code
// (fixtures video/raw_frame_*.safetensors), in the order trace.json lists the processed frames. It lets
// the control plane be tested alone: every detect() call moves to the next recorded frame; propagate()
// returns the recorded tracker outputs of the state's objects; memory / mask-input calls are logged.
#pragma once
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "pipeline/backends/backend.h"

namespace segmux::pipeline {

struct ReplayRecord {
  std::string phase;  // "add_prompt" / "propagate"
  int frame_index = 0;
  std::string path;
};

class ReplayBackend : public ModelBackend {
 public:
  ReplayBackend(std::vector<ReplayRecord> records, BackendGeometry geometry);
  // Fixture folder (…/sam31-tiny): sizes from config.json, frame order from video/trace.json.
  static ReplayBackend from_fixture(const std::string& fixture_dir);

  BackendGeometry geometry() const override { return geo_; }
  void encode_text(const std::vector<std::string>& text_batch) override;
  void run_backbone(int frame_index, const RgbFrame& frame) override;
  void release_frame(int frame_index) override;
  DetectorOutput detect(int frame_index) override;
  TrackerOutput propagate(const TrackerStateView& state, int frame_index, bool reverse) override;
  void encode_memory(const TrackerStateView& state, int frame_index, const Tensor& masks,
                     const Tensor& object_score_logits) override;
  void add_masks(const TrackerStateView& state, int frame_index, const std::vector<int64_t>& obj_ids,
                 const Tensor& masks, MaskInputKind kind, bool conditioning) override;
  void remove_objects(const TrackerStateView& state, const std::vector<int64_t>& removed_obj_ids) override;
  void drop_state(int state_id) override;
  void reset() override;

  // The record of the frame being processed (after its detect()), with aliases resolved.
  const TensorFile& current() const;
  const ReplayRecord& current_record() const;
  int records_consumed() const { return next_; }
  // One line per call, e.g. "propagate f=3 state=0 n=3", for tests of the call sequence.
  const std::vector<std::string>& call_log() const { return log_; }
  std::vector<std::string> text_batch() const { return text_; }

 private:
  std::vector<ReplayRecord> records_;
  BackendGeometry geo_;
  int next_ = 0;
  TensorFile current_;
  std::vector<std::string> log_;
  std::vector<std::string> text_;
};

}  // namespace segmux::pipeline
