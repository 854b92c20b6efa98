#include "verify/replay_backend.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/json_limits.h"
#include "models/sam31/config.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::verify {

using namespace segmux::pipeline;

ReplaySession::ReplaySession(std::vector<ReplayRecord> records, ModelGeometry geometry)
    : records_(std::move(records)), geo_(geometry) {}

ReplaySession ReplaySession::from_fixture(const std::string& dir) {
  sam31::ModelConfig mc = load_fixture_config(dir + "/config.json");
  ModelGeometry geo{mc.image_size, mc.low_res_mask_size(), mc.input_mask_size()};
  const std::string trace_path = dir + "/video/trace.json";
  nlohmann::json trace = read_untrusted_json_file(trace_path);
  SEGMUX_CHECK(trace.is_object() && trace.contains("frames") && trace["frames"].is_array(), "'", trace_path,
               "' has no 'frames' list");
  std::vector<ReplayRecord> recs;
  for (const auto& fr : trace["frames"])
    recs.push_back({fr.at("phase").get<std::string>(), fr.at("frame_index").get<int>(),
                    dir + "/video/" + fr.at("raw_file").get<std::string>()});
  return ReplaySession(std::move(recs), geo);
}

const TensorFile& ReplaySession::current() const {
  SEGMUX_CHECK(next_ > 0, "replay: no frame has been detected yet");
  return current_;
}
const ReplayRecord& ReplaySession::current_record() const {
  SEGMUX_CHECK(next_ > 0, "replay: no frame has been detected yet");
  return records_[size_t(next_ - 1)];
}

void ReplaySession::run_backbone(int frame_index, const RgbFrame&) {
  if (!held_.insert(frame_index).second) return;
  log_.push_back("backbone f=" + std::to_string(frame_index));
}
void ReplaySession::release_frame(int frame_index) {
  held_.erase(frame_index);
  log_.push_back("release f=" + std::to_string(frame_index));
}

DetectorOutput ReplaySession::detect(int frame_index, const std::vector<std::string>& text_batch,
                                     const std::vector<sam31::BoxExemplar>& exemplars) {
  SEGMUX_CHECK(exemplars.empty(), "this model does not take box exemplars");
  SEGMUX_CHECK(held_.count(frame_index), "replay: detect on frame ", frame_index, " before its backbone run");
  text_ = text_batch;
  SEGMUX_CHECK(next_ < int(records_.size()), "replay: frame ", frame_index, " requested after the ", records_.size(),
               " recorded frames");
  const ReplayRecord& rec = records_[size_t(next_)];
  SEGMUX_CHECK(rec.frame_index == frame_index, "replay: recorded frame ", rec.frame_index, " (", rec.phase,
               ") comes next, but the control plane processes frame ", frame_index);
  current_ = read_safetensors(rec.path);
  // Identical tensors are stored once; "alias:<name>" metadata names the stored copy.
  for (const auto& [key, target] : current_.metadata)
    if (key.rfind("alias:", 0) == 0 && current_.has(target)) current_.tensors[key.substr(6)] = current_.at(target);
  ++next_;
  log_.push_back("detect f=" + std::to_string(frame_index));

  const Tensor& logits = current_.at("grounding_pred_logits_preNMS");
  const Tensor& boxes = current_.at("det_boxes_xyxy");
  const Tensor& cand = current_.at("det_candidate_queries");
  const Tensor& cand_masks = current_.at("det_candidate_mask_logits");
  const int64_t Q = logits.numel();
  const int hm = geo_.low_res_mask_size;
  SEGMUX_CHECK(cand_masks.rank() == 3 && cand_masks.dim(1) == hm && cand_masks.dim(2) == hm, rec.path,
               ": candidate masks ", shape_str(cand_masks.shape()), " do not match the mask size ", hm);
  DetectorOutput out;
  out.pred_logits = logits.clone();
  out.boxes_xyxy = boxes.clone();
  // Only queries above the detection threshold were recorded with masks; the others never take part
  // in NMS or association, so zero masks stand in for them.
  out.mask_logits = Tensor(DType::f32, {Q, hm, hm});
  const size_t plane = size_t(hm) * size_t(hm);
  for (int64_t k = 0; k < cand.numel(); ++k) {
    int64_t q = int64_t(cand.get_as_double(k));
    SEGMUX_CHECK(q >= 0 && q < Q, rec.path, ": candidate query ", q, " out of range");
    std::memcpy(out.mask_logits.data<float>() + size_t(q) * plane, cand_masks.data<float>() + size_t(k) * plane,
                plane * sizeof(float));
  }
  return out;
}

TrackerOutput ReplaySession::propagate(const TrackerStateView& state, int frame_index, bool reverse) {
  const TensorFile& f = current();
  SEGMUX_CHECK(current_record().frame_index == frame_index, "replay: propagation of frame ", frame_index,
               " while frame ", current_record().frame_index, " is current");
  const Tensor& ids = f.at("trk_obj_ids");
  const Tensor& masks = f.at("trk_low_res_mask_logits");
  const Tensor& scores = f.at("trk_obj_score_logits");
  const int hm = geo_.low_res_mask_size;
  const size_t plane = size_t(hm) * size_t(hm);
  TrackerOutput out;
  const int64_t n = int64_t(state.obj_ids.size());
  out.low_res_masks = Tensor(DType::f32, {n, hm, hm});
  out.object_score_logits = Tensor(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = -1;
    for (int64_t k = 0; k < ids.numel(); ++k)
      if (int64_t(ids.get_as_double(k)) == state.obj_ids[size_t(i)]) row = k;
    SEGMUX_CHECK(row >= 0, "replay: frame ", frame_index, " has no recorded tracker output for object ",
                 state.obj_ids[size_t(i)]);
    std::memcpy(out.low_res_masks.data<float>() + size_t(i) * plane, masks.data<float>() + size_t(row) * plane,
                plane * sizeof(float));
    out.object_score_logits.data<float>()[i] = scores.data<float>()[row];
  }
  bool stored = false;  // frames with mask inputs return their stored outputs (no decoder run)
  for (const auto& m : state.memory_frames)
    stored = stored || (m.frame_index == frame_index && !m.input_obj_ids.empty());
  log_.push_back(std::string(stored ? "stored_output" : "propagate") + " f=" + std::to_string(frame_index) +
                 " state=" + std::to_string(state.state_id) + " n=" + std::to_string(n) + (reverse ? " reverse" : ""));
  return out;
}

namespace {
// Data-space indices of the objects with a mask input on this frame (the memory encoder's
// conditioning channel), e.g. "[0,2]".
std::string conditioning_objects(const TrackerStateView& state, int frame_index) {
  std::string out = "[";
  for (const auto& m : state.memory_frames) {
    if (m.frame_index != frame_index) continue;
    bool first = true;
    for (size_t i = 0; i < state.obj_ids.size(); ++i)
      for (int64_t id : m.input_obj_ids)
        if (id == state.obj_ids[i]) {
          out += (first ? "" : ",") + std::to_string(i);
          first = false;
        }
  }
  return out + "]";
}
}  // namespace

void ReplaySession::encode_memory(const TrackerStateView& state, int frame_index, const Tensor& masks,
                                  const Tensor& object_score_logits) {
  SEGMUX_CHECK(masks.rank() == 3 && masks.dim(0) == int64_t(state.obj_ids.size()) &&
                   masks.dim(1) == geo_.input_mask_size && object_score_logits.numel() == masks.dim(0),
               "encode_memory: masks ", shape_str(masks.shape()), " / scores ", shape_str(object_score_logits.shape()),
               " for a state of ", state.obj_ids.size(), " objects");
  log_.push_back("encode_memory f=" + std::to_string(frame_index) + " state=" + std::to_string(state.state_id) +
                 " n=" + std::to_string(masks.dim(0)) + " cond=" + conditioning_objects(state, frame_index));
}

void ReplaySession::add_masks(const TrackerStateView& state, int frame_index, const std::vector<int64_t>& obj_ids,
                              const Tensor& masks, MaskInputKind kind, bool conditioning) {
  SEGMUX_CHECK(masks.rank() == 3 && masks.dim(0) == int64_t(obj_ids.size()) && masks.dim(1) == geo_.input_mask_size,
               "add_masks: masks ", shape_str(masks.shape()), " for ", obj_ids.size(), " objects");
  std::string ids;
  for (int64_t id : obj_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  log_.push_back(std::string(kind == MaskInputKind::NewObjects ? "add_new" : "recondition") +
                 " f=" + std::to_string(frame_index) + " state=" + std::to_string(state.state_id) + " ids=" + ids +
                 (conditioning ? " cond" : " noncond") + " encode cond=" + conditioning_objects(state, frame_index));
}

void ReplaySession::remove_objects(const TrackerStateView& state, const std::vector<int64_t>& removed) {
  std::string ids;
  for (int64_t id : removed) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  log_.push_back("remove state=" + std::to_string(state.state_id) + " ids=" + ids);
}
void ReplaySession::drop_state(int state_id) { log_.push_back("drop_state " + std::to_string(state_id)); }

}  // namespace segmux::verify
