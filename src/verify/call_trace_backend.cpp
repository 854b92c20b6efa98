#include "verify/call_trace_backend.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace segmux::verify {

using namespace segmux::pipeline;
using nlohmann::json;

namespace {

json state_json(const TrackerStateView& s) {
  json frames = json::array();
  for (const MemoryFrame& m : s.memory_frames)
    frames.push_back({{"frame", m.frame_index}, {"conditioning", m.conditioning}, {"input_obj_ids", m.input_obj_ids}});
  return {{"state", s.state_id}, {"obj_ids", s.obj_ids}, {"buckets", s.buckets}, {"memory_frames", frames}};
}

// Per object: pixels with a positive logit (bool/u8 masks: set pixels) and the logit sum (floats).
void add_mask_stats(json& j, const Tensor& masks) {
  json areas = json::array(), sums = json::array();
  const int64_t n = masks.rank() > 0 ? masks.dim(0) : 0;
  const int64_t per = n > 0 ? masks.numel() / n : 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t area = 0;
    double sum = 0;
    if (masks.dtype() == DType::f32) {
      const float* p = masks.data<float>() + i * per;
      for (int64_t k = 0; k < per; ++k) {
        area += p[k] > 0;
        sum += p[k];
      }
      sums.push_back(std::round(sum * 100) / 100);
    } else {
      const uint8_t* p = static_cast<const uint8_t*>(masks.raw()) + i * per;
      for (int64_t k = 0; k < per; ++k) area += p[k] != 0;
    }
    areas.push_back(area);
  }
  j["areas"] = areas;
  if (!sums.empty()) j["logit_sums"] = sums;
}

json rounded(const Tensor& t) {
  json out = json::array();
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(std::round(double(t.data<float>()[i]) * 1e4) / 1e4);
  return out;
}

}  // namespace

TrackerOutput CallTraceSession::propagate(const TrackerStateView& state, int frame, bool reverse) {
  TrackerOutput r = inner_->propagate(state, frame, reverse);
  json j = {{"call", "propagate"}, {"frame", frame}, {"reverse", reverse}};
  if (state.tracker_only) j["tracker_only"] = true;
  j.update(state_json(state));
  add_mask_stats(j, r.low_res_masks);
  j["object_scores"] = rounded(r.object_score_logits);
  out_ << j.dump() << "\n";
  return r;
}

void CallTraceSession::encode_memory(const TrackerStateView& state, int frame, const Tensor& masks,
                                     const Tensor& object_score_logits) {
  json j = {{"call", "encode_memory"}, {"frame", frame}};
  j.update(state_json(state));
  add_mask_stats(j, masks);
  j["object_scores"] = rounded(object_score_logits);
  out_ << j.dump() << "\n";
  inner_->encode_memory(state, frame, masks, object_score_logits);
}

void CallTraceSession::add_masks(const TrackerStateView& state, int frame, const std::vector<int64_t>& obj_ids,
                                 const Tensor& masks, MaskInputKind kind, bool conditioning) {
  json j = {{"call", kind == MaskInputKind::NewObjects ? "add_masks" : "recondition"},
            {"frame", frame},
            {"added_obj_ids", obj_ids},
            {"conditioning", conditioning}};
  j.update(state_json(state));
  add_mask_stats(j, masks);
  out_ << j.dump() << "\n";
  inner_->add_masks(state, frame, obj_ids, masks, kind, conditioning);
}

void CallTraceSession::add_mask_prompt(const TrackerStateView& state, int frame, int64_t obj_id,
                                       const Tensor& input_mask, const Tensor& video_mask, bool conditioning) {
  json j = {{"call", "add_mask_prompt"}, {"frame", frame}, {"obj_id", obj_id}, {"conditioning", conditioning}};
  j.update(state_json(state));
  add_mask_stats(j, video_mask);
  out_ << j.dump() << "\n";
  inner_->add_mask_prompt(state, frame, obj_id, input_mask, video_mask, conditioning);
}

TrackerOutput CallTraceSession::add_points(const TrackerStateView& state, int frame, int64_t obj_id,
                                           const PointInputs& points, bool conditioning) {
  TrackerOutput r = inner_->add_points(state, frame, obj_id, points, conditioning);
  json j = {{"call", "add_points"}, {"frame", frame}, {"obj_id", obj_id}, {"conditioning", conditioning}};
  j.update(state_json(state));
  add_mask_stats(j, r.low_res_masks);
  j["object_scores"] = rounded(r.object_score_logits);
  out_ << j.dump() << "\n";
  return r;
}

void CallTraceSession::relayout_refined_object(const TrackerStateView& before, const TrackerStateView& after,
                                               int64_t obj_id) {
  json j = {{"call", "relayout_refined_object"}, {"obj_id", obj_id}, {"buckets_before", before.buckets}};
  j.update(state_json(after));
  out_ << j.dump() << "\n";
  inner_->relayout_refined_object(before, after, obj_id);
}

void CallTraceSession::extract_object(const TrackerStateView& source, const TrackerStateView& singleton,
                                      int64_t obj_id) {
  json j = {{"call", "extract_object"}, {"obj_id", obj_id}, {"source", state_json(source)}};
  j.update(state_json(singleton));
  out_ << j.dump() << "\n";
  inner_->extract_object(source, singleton, obj_id);
}

void CallTraceSession::remove_objects(const TrackerStateView& state, const std::vector<int64_t>& removed) {
  json j = {{"call", "remove_objects"}, {"removed_obj_ids", removed}};
  j.update(state_json(state));
  out_ << j.dump() << "\n";
  inner_->remove_objects(state, removed);
}

}  // namespace segmux::verify
