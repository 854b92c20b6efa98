// A model whose sessions serve the raw per-frame model outputs recorded from the official code
// (fixtures video/raw_frame_*.safetensors), in the order trace.json lists the processed frames. It lets
// the control plane be tested alone: every detect() call moves to the next recorded frame; propagate()
// returns the recorded tracker outputs of the state's objects; memory / mask-input calls are logged.
// Each session replays the recording from its start.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "pipeline/backends/model.h"

namespace segmux::verify {

struct ReplayRecord {
  std::string phase;  // "add_prompt" / "propagate"
  int frame_index = 0;
  std::string path;
};

class ReplaySession : public pipeline::ModelSession {
 public:
  ReplaySession(std::vector<ReplayRecord> records, pipeline::ModelGeometry geometry);
  // Fixture folder (…/sam31-tiny): sizes from config.json, frame order from video/trace.json.
  static ReplaySession from_fixture(const std::string& fixture_dir);

  pipeline::ModelGeometry geometry() const override { return geo_; }
  void run_backbone(int frame_index, const pipeline::RgbFrame& frame) override;
  bool has_frame(int frame_index) const override { return held_.count(frame_index) != 0; }
  void release_frame(int frame_index) override;
  // Refuses box exemplars: the recording is of a text prompt.
  pipeline::DetectorOutput detect(int frame_index, const std::vector<std::string>& text_batch,
                                  const std::vector<sam31::BoxExemplar>& exemplars) override;
  pipeline::TrackerOutput propagate(const pipeline::TrackerStateView& state, int frame_index, bool reverse) override;
  void encode_memory(const pipeline::TrackerStateView& state, int frame_index, const Tensor& masks,
                     const Tensor& object_score_logits) override;
  void add_masks(const pipeline::TrackerStateView& state, int frame_index, const std::vector<int64_t>& obj_ids,
                 const Tensor& masks, pipeline::MaskInputKind kind, bool conditioning) override;
  void remove_objects(const pipeline::TrackerStateView& state, const std::vector<int64_t>& removed_obj_ids) override;
  void drop_state(int state_id) override;

  // The record of the frame being processed (after its detect()), with aliases resolved.
  const TensorFile& current() const;
  const ReplayRecord& current_record() const;
  int records_consumed() const { return next_; }
  // One line per call, e.g. "propagate f=3 state=0 n=3", for tests of the call sequence.
  const std::vector<std::string>& call_log() const { return log_; }
  std::vector<std::string> text_batch() const { return text_; }  // of the last detection

 private:
  std::vector<ReplayRecord> records_;
  pipeline::ModelGeometry geo_;
  int next_ = 0;
  TensorFile current_;
  std::vector<std::string> log_;
  std::vector<std::string> text_;
  std::set<int> held_;  // frames "run" and not released
};

class ReplayModel : public pipeline::Model {
 public:
  explicit ReplayModel(ReplaySession recording) : recording_(std::move(recording)) {}
  static ReplayModel from_fixture(const std::string& fixture_dir) {
    return ReplayModel(ReplaySession::from_fixture(fixture_dir));
  }
  pipeline::ModelGeometry geometry() const override { return recording_.geometry(); }
  std::unique_ptr<pipeline::ModelSession> new_session() override { return std::make_unique<ReplaySession>(recording_); }

 private:
  const ReplaySession recording_;  // never run: each session copies it
};

}  // namespace segmux::verify
