// tracker_io: memory-bank selection (video_tracking_multiplex.py _prepare_memory_conditioned_features,
// sam3_tracker_utils.py select_closest_cond_frames), padding, mux and demux (multiplex_utils.py).
#include "models/sam31/tracker_io.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/tensor_ops.h"
#include "io/json_limits.h"
#include "models/sam31/layers.h"
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/tensor_names.h"

namespace segmux::sam31 {

namespace pd = names::propagation_decoder;

namespace {

// Python's floor division.
int floor_div(int a, int b) {
  int q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

void check_shape(const Tensor& t, const Shape& want, const std::string& what) {
  SEGMUX_CHECK(t.defined(), what, " is missing");
  SEGMUX_CHECK(t.shape() == want, what, " has shape ", shape_str(t.shape()), ", expected ", shape_str(want));
}

// Copies the `index`-th slice along axis 0 of src into the `slot`-th slice along axis 0 of dst
// (same dtype, same per-slice element count).
void copy_slice(const Tensor& src, int64_t index, Tensor& dst, int64_t slot) {
  SEGMUX_CHECK(src.dtype() == dst.dtype(), "copy_slice: dtype ", dtype_name(src.dtype()), " vs ",
               dtype_name(dst.dtype()));
  SEGMUX_CHECK(index >= 0 && index < src.dim(0) && slot >= 0 && slot < dst.dim(0), "copy_slice: index out of range");
  const size_t bytes = src.nbytes() / size_t(src.dim(0));
  SEGMUX_CHECK(bytes == dst.nbytes() / size_t(dst.dim(0)), "copy_slice: slice sizes differ (", shape_str(src.shape()),
               " vs ", shape_str(dst.shape()), ")");
  std::memcpy(static_cast<std::byte*>(dst.raw()) + bytes * size_t(slot),
              static_cast<const std::byte*>(src.raw()) + bytes * size_t(index), bytes);
}

const Tensor& output_of(const std::map<std::string, Tensor>& outs, const std::string& name, size_t bucket) {
  auto it = outs.find(name);
  SEGMUX_CHECK(it != outs.end(), "propagation outputs of bucket ", bucket, " lack '", name, "'");
  return it->second;
}

}  // namespace

int MultiplexAssignment::num_objects() const {
  int n = 0;
  for (auto& b : buckets)
    for (int v : b) n += v >= 0;
  return n;
}

void MultiplexAssignment::validate(int multiplex_count) const {
  const int n = num_objects();
  std::vector<int> seen(size_t(n), 0);
  for (size_t b = 0; b < buckets.size(); ++b) {
    SEGMUX_CHECK(int(buckets[b].size()) == multiplex_count, "multiplex bucket ", b, " has ", buckets[b].size(),
                 " slots, expected ", multiplex_count);
    for (int v : buckets[b]) {
      SEGMUX_CHECK(v >= 0 || v == kSlotEmpty || v == kSlotRemoved, "multiplex bucket ", b, " has slot value ", v,
                   " (object index, -1 or -1116 expected)");
      if (v < 0) continue;
      SEGMUX_CHECK(v < n, "multiplex bucket ", b, " holds object index ", v, " but there are only ", n, " objects");
      SEGMUX_CHECK(seen[size_t(v)]++ == 0, "object index ", v, " appears twice in the multiplex assignment");
    }
  }
}

std::pair<int, int> MultiplexAssignment::find(int object_index) const {
  for (size_t b = 0; b < buckets.size(); ++b)
    for (size_t s = 0; s < buckets[b].size(); ++s)
      if (buckets[b][s] == object_index) return {int(b), int(s)};
  fail("object index ", object_index, " is not in the multiplex assignment");
}

MemorySelection select_memory(const ModelConfig& cfg, const MemoryBank& bank, int frame_idx, int num_frames,
                              const MemorySelectionOptions& opt) {
  SEGMUX_CHECK(!bank.cond_frames.empty(), "frame ", frame_idx,
               ": the memory bank has no conditioning frame (the official tracker asserts one)");
  SEGMUX_CHECK(opt.memory_temporal_stride >= 1, "memory_temporal_stride must be >= 1");
  const int sign = opt.track_in_reverse ? -1 : 1;
  const int max_cond = cfg.max_cond_frames_in_attn;

  // select_closest_cond_frames (order = the official dict insertion order; cond frames in index order).
  std::vector<int> selected;
  auto select = [&](int t) {
    if (std::find(selected.begin(), selected.end(), t) == selected.end()) selected.push_back(t);
  };
  if (max_cond == -1 || int(bank.cond_frames.size()) <= max_cond) {
    for (auto& [t, f] : bank.cond_frames) selected.push_back(t);
  } else {
    SEGMUX_CHECK(max_cond >= 2, "max_cond_frames_in_attn must be >= 2 when limiting conditioning frames");
    if (opt.keep_first_cond_frame) {
      int first = -1;
      for (auto& [t, f] : bank.cond_frames)
        if (t < frame_idx) {
          first = t;
          break;
        }
      if (first < 0)
        for (auto& [t, f] : bank.cond_frames)
          if (t > frame_idx) first = t;
      if (first >= 0) select(first);
    }
    int before = -1, after = -1;
    for (auto& [t, f] : bank.cond_frames) {
      if (t < frame_idx) before = t;
      if (t >= frame_idx && after < 0) after = t;
    }
    if (before >= 0) select(before);
    if (after >= 0) select(after);
    std::vector<int> remain;
    for (auto& [t, f] : bank.cond_frames)
      if (std::find(selected.begin(), selected.end(), t) == selected.end()) remain.push_back(t);
    std::stable_sort(remain.begin(), remain.end(),
                     [&](int a, int b) { return std::abs(a - frame_idx) < std::abs(b - frame_idx); });
    const int num_remain = max_cond - int(selected.size());
    for (int i = 0; i < num_remain && i < int(remain.size()); ++i) selected.push_back(remain[size_t(i)]);
  }
  auto is_selected = [&](int t) { return std::find(selected.begin(), selected.end(), t) != selected.end(); };
  // non_cond_frame_outputs.get(t) or, failing that, an unselected conditioning frame.
  auto lookup = [&](int t) -> const StoredFrame* {
    auto it = bank.non_cond_frames.find(t);
    if (it != bank.non_cond_frames.end()) return &it->second;
    auto ct = bank.cond_frames.find(t);
    if (ct != bank.cond_frames.end() && !is_selected(t)) return &ct->second;
    return nullptr;
  };

  MemorySelection sel;
  auto tpos_index = [&](int t_pos) {
    // use_maskmem_tpos_v2: the last row is the "out of range" embedding.
    if (t_pos <= 0 || t_pos >= cfg.num_maskmem) return cfg.num_maskmem - 1;
    return cfg.num_maskmem - t_pos - 1;
  };
  for (int t : selected) {
    const StoredFrame& f = bank.cond_frames.at(t);
    if (f.maskmem_features.defined()) sel.spatial.push_back({t, true, tpos_index((frame_idx - t) * sign)});
  }
  const int r = opt.memory_temporal_stride;
  for (int t_pos = 1; t_pos < cfg.num_maskmem; ++t_pos) {
    const int t_rel = cfg.num_maskmem - t_pos;
    int prev;
    if (t_rel == 1) {
      prev = opt.track_in_reverse ? frame_idx + 1 : frame_idx - 1;
    } else if (!opt.track_in_reverse) {
      prev = floor_div(frame_idx - 2, r) * r - (t_rel - 2) * r;
    } else {
      prev = -floor_div(-(frame_idx + 2), r) * r + (t_rel - 2) * r;
    }
    const StoredFrame* f = lookup(prev);
    if (f && f->maskmem_features.defined()) sel.spatial.push_back({prev, false, tpos_index(t_pos)});
  }

  // Object pointers.
  const int max_ptrs = std::min(num_frames, cfg.max_obj_ptrs_in_encoder);
  const float t_diff_max = float(max_ptrs - 1);
  auto add_ptr = [&](int t, bool is_cond, int rel, const StoredFrame& f) {
    if (!f.obj_ptr.defined()) return;  // the official filters outputs without "obj_ptr"
    sel.pointers.push_back({t, is_cond, rel, float(rel) / t_diff_max});
  };
  for (int t : selected) {
    if (opt.only_obj_ptrs_in_the_past && (opt.track_in_reverse ? t < frame_idx : t > frame_idx)) continue;
    int rel = opt.use_signed_tpos_enc_to_obj_ptrs ? (frame_idx - t) * sign : std::abs(frame_idx - t);
    add_ptr(t, true, rel, bank.cond_frames.at(t));
  }
  for (int t_diff = 1; t_diff < max_ptrs; ++t_diff) {
    int t = opt.track_in_reverse ? frame_idx + t_diff : frame_idx - t_diff;
    if (t < 0 || t >= num_frames) break;
    if (const StoredFrame* f = lookup(t)) add_ptr(t, false, t_diff, *f);
  }
  return sel;
}

PropagationInputs assemble_propagation_inputs(const ModelConfig& cfg, const MemoryBank& bank,
                                              const MultiplexAssignment& assignment, int bucket, int frame_idx,
                                              int num_frames, const CurrentFrameFeatures& feats,
                                              const MemorySelectionOptions& opt, const PropagationSlots& slots) {
  const int64_t D = cfg.d_model, g = cfg.token_grid(), M = cfg.multiplex_count;
  const int64_t S = slots.memory_slots > 0 ? slots.memory_slots : propagation_memory_slots(cfg);
  const int64_t P = slots.pointer_slots > 0 ? slots.pointer_slots : propagation_pointer_slots(cfg);
  assignment.validate(int(M));
  SEGMUX_CHECK(bucket >= 0 && bucket < assignment.num_buckets(), "bucket ", bucket, " out of range (",
               assignment.num_buckets(), " buckets)");
  const auto hr = cfg.tracker_high_res_channels();
  check_shape(feats.image, {1, D, g, g}, "current image features");
  check_shape(feats.image_pos, {1, D, g, g}, "current image position encoding");
  check_shape(feats.high_res_s0, {1, hr[0], 4 * g, 4 * g}, "high_res_s0");
  check_shape(feats.high_res_s1, {1, hr[1], 2 * g, 2 * g}, "high_res_s1");

  PropagationInputs out;
  out.selection = select_memory(cfg, bank, frame_idx, num_frames, opt);
  const auto& sel = out.selection;
  SEGMUX_CHECK(int64_t(sel.spatial.size()) <= S, "frame ", frame_idx, ": ", sel.spatial.size(),
               " memory frames selected, the candidate has ", S, " slots");
  SEGMUX_CHECK(int64_t(sel.pointers.size()) <= P, "frame ", frame_idx, ": ", sel.pointers.size(),
               " pointer frames selected, the candidate has ", P, " slots");
  out.has_spatial_memory = !sel.spatial.empty();

  auto frame_of = [&](int t, bool is_cond) -> const StoredFrame& {
    return is_cond ? bank.cond_frames.at(t)
                   : (bank.non_cond_frames.count(t) ? bank.non_cond_frames.at(t) : bank.cond_frames.at(t));
  };

  Tensor maskmem(DType::bf16, {S, D, g, g}), mem_image(DType::f32, {S, D, g, g});
  Tensor tpos_index(DType::i64, {S}), mem_valid(DType::f32, {S});
  for (size_t i = 0; i < sel.spatial.size(); ++i) {
    const auto& s = sel.spatial[i];
    const StoredFrame& f = frame_of(s.frame_idx, s.is_cond);
    const std::string what = "memory frame " + std::to_string(s.frame_idx);
    SEGMUX_CHECK(f.maskmem_features.rank() == 4 && f.maskmem_features.dim(0) > bucket, what, ": maskmem_features ",
                 shape_str(f.maskmem_features.shape()), " has no bucket ", bucket);
    Tensor mm = f.maskmem_features.dtype() == DType::bf16 ? f.maskmem_features : f.maskmem_features.cast(DType::bf16);
    check_shape(mm, {mm.dim(0), D, g, g}, what + " maskmem_features");
    copy_slice(mm, bucket, maskmem, int64_t(i));
    check_shape(f.image_features, {1, D, g, g}, what + " image_features");
    copy_slice(as_f32(f.image_features), 0, mem_image, int64_t(i));
    tpos_index.data<int64_t>()[i] = s.tpos_index;
    mem_valid.data<float>()[i] = 1.0f;
  }
  Tensor ptrs(DType::f32, {P, M, D}), ptr_tpos(DType::f32, {P}), ptr_valid(DType::f32, {P});
  for (size_t i = 0; i < sel.pointers.size(); ++i) {
    const auto& p = sel.pointers[i];
    const StoredFrame& f = frame_of(p.frame_idx, p.is_cond);
    const std::string what = "pointer frame " + std::to_string(p.frame_idx);
    Tensor op = as_f32(f.obj_ptr);
    SEGMUX_CHECK(op.rank() == 3 && op.dim(0) > bucket && op.dim(1) == M && op.dim(2) == D, what, ": obj_ptr ",
                 shape_str(op.shape()), " does not hold bucket ", bucket, " of (buckets, ", M, ", ", D, ")");
    copy_slice(op, bucket, ptrs, int64_t(i));
    ptr_tpos.data<float>()[i] = p.tpos;
    ptr_valid.data<float>()[i] = 1.0f;
  }
  Tensor slot_valid(DType::f32, {1, M});
  for (int64_t s = 0; s < M; ++s) slot_valid.data<float>()[s] = assignment.buckets[size_t(bucket)][size_t(s)] >= 0;

  out.tensors[pd::kImage] = as_f32(feats.image);
  out.tensors[pd::kImagePos] = as_f32(feats.image_pos);
  out.tensors[pd::kHighResS0] = as_f32(feats.high_res_s0);
  out.tensors[pd::kHighResS1] = as_f32(feats.high_res_s1);
  out.tensors[pd::kMemoryMaskmem] = maskmem;
  out.tensors[pd::kMemoryImage] = mem_image;
  out.tensors[pd::kMemoryTposIndex] = tpos_index;
  out.tensors[pd::kMemoryValid] = mem_valid;
  out.tensors[pd::kObjPtrs] = ptrs;
  out.tensors[pd::kObjPtrTpos] = ptr_tpos;
  out.tensors[pd::kObjPtrValid] = ptr_valid;
  out.tensors[pd::kSlotValid] = slot_valid;
  return out;
}

PropagationResult demux_propagation_outputs(const ModelConfig& cfg, const MultiplexAssignment& assignment,
                                            const std::vector<std::map<std::string, Tensor>>& outputs) {
  const int64_t D = cfg.d_model, M = cfg.multiplex_count, hw = cfg.low_res_mask_size();
  const int64_t nm = cfg.num_multimask_outputs;
  assignment.validate(int(M));
  SEGMUX_CHECK(int(outputs.size()) == assignment.num_buckets(), "demux: ", outputs.size(), " bucket outputs for ",
               assignment.num_buckets(), " buckets");
  for (size_t b = 0; b < outputs.size(); ++b) {
    check_shape(output_of(outputs[b], pd::kMasks, b), {1, M, nm, hw, hw}, "masks");
    check_shape(output_of(outputs[b], pd::kIouPred, b), {1, M, nm}, "iou_pred");
    check_shape(output_of(outputs[b], pd::kObjectScoreLogits, b), {1, M, 1}, "object_score_logits");
    check_shape(output_of(outputs[b], pd::kObjPtr, b), {1, M, D}, "obj_ptr");
    check_shape(output_of(outputs[b], pd::kSamTokens, b), {1, M, nm, D}, "sam_tokens");
    check_shape(output_of(outputs[b], pd::kBestMaskIndex, b), {1, M}, "best_mask_index");
  }
  const int64_t N = assignment.num_objects();
  PropagationResult r;
  r.low_res_multimasks = Tensor(DType::f32, {N, nm, hw, hw});
  r.ious = Tensor(DType::f32, {N, nm});
  r.low_res_masks = Tensor(DType::f32, {N, 1, hw, hw});
  r.object_score_logits = Tensor(DType::f32, {N, 1});
  r.obj_ptr = Tensor(DType::f32, {N, D});
  r.sam_tokens = Tensor(DType::f32, {N, nm, D});
  const int64_t plane = hw * hw;
  constexpr float kNoObjScore = -1024.0f;  // NO_OBJ_SCORE
  for (int64_t i = 0; i < N; ++i) {
    auto [b, s] = assignment.find(int(i));
    const auto& o = outputs[size_t(b)];
    const float* masks = o.at(pd::kMasks).data<float>() + s * nm * plane;
    const float score = o.at(pd::kObjectScoreLogits).data<float>()[s];
    const int64_t best = o.at(pd::kBestMaskIndex).data<int64_t>()[s];
    SEGMUX_CHECK(best >= 0 && best < nm, "best_mask_index ", best, " out of range");
    float* dst = r.low_res_multimasks.data<float>() + i * nm * plane;
    for (int64_t k = 0; k < nm * plane; ++k) dst[k] = score > 0.0f ? masks[k] : kNoObjScore;
    std::memcpy(r.low_res_masks.data<float>() + i * plane, dst + best * plane, size_t(plane) * sizeof(float));
    std::memcpy(r.ious.data<float>() + i * nm, o.at(pd::kIouPred).data<float>() + s * nm, size_t(nm) * sizeof(float));
    r.object_score_logits.data<float>()[i] = score;
    std::memcpy(r.obj_ptr.data<float>() + i * D, o.at(pd::kObjPtr).data<float>() + s * D, size_t(D) * sizeof(float));
    std::memcpy(r.sam_tokens.data<float>() + i * nm * D, o.at(pd::kSamTokens).data<float>() + s * nm * D,
                size_t(nm * D) * sizeof(float));
  }
  std::vector<Tensor> ptrs;
  for (size_t b = 0; b < outputs.size(); ++b) ptrs.push_back(outputs[b].at(pd::kObjPtr));
  r.stored_obj_ptr = stack_buckets(ptrs);
  return r;
}

std::map<std::string, Tensor> assemble_memory_encoder_inputs(const ModelConfig& cfg,
                                                             const MultiplexAssignment& assignment, int bucket,
                                                             const Tensor& pix_feat, const Tensor& mask_logits,
                                                             const Tensor& object_score_logits,
                                                             const std::set<int>& conditioning_objects) {
  const int64_t D = cfg.d_model, g = cfg.token_grid(), M = cfg.multiplex_count;
  assignment.validate(int(M));
  SEGMUX_CHECK(bucket >= 0 && bucket < assignment.num_buckets(), "bucket ", bucket, " out of range");
  const int64_t N = assignment.num_objects();
  check_shape(pix_feat, {1, D, g, g}, "memory-encoder pix_feat");
  SEGMUX_CHECK(mask_logits.rank() == 4 && mask_logits.dim(0) == N && mask_logits.dim(1) == 1 &&
                   mask_logits.dim(2) == mask_logits.dim(3),
               "memory-encoder mask logits have shape ", shape_str(mask_logits.shape()), ", expected (", N,
               ", 1, H, H)");
  check_shape(object_score_logits, {N, 1}, "memory-encoder object_score_logits");
  for (int c : conditioning_objects)
    SEGMUX_CHECK(c >= 0 && c < N, "conditioning object index ", c, " out of range (", N, " objects)");
  const int64_t H = mask_logits.dim(2);
  Tensor masks_f = as_f32(mask_logits), scores_f = as_f32(object_score_logits);
  Tensor slot_valid(DType::f32, {1, M}), slot_cond(DType::f32, {1, M}), slot_score(DType::f32, {1, M});
  const auto& slots = assignment.buckets[size_t(bucket)];
  // A full bucket whose slots hold consecutive objects in order (16 objects in one bucket, or the full
  // buckets of 32 / 64 at full size) muxes to those objects' masks as they lie: a view, not a new
  // [1, M, H, H] stack (85 MB at full size, zeroed and copied on every frame).
  bool identity = slots[0] >= 0;
  for (int64_t s = 0; s < M && identity; ++s) identity = slots[size_t(s)] == slots[0] + s;
  Tensor masks = identity ? Tensor(DType::f32, {1, M, H, H}, masks_f.storage(),
                                   masks_f.byte_offset() + size_t(slots[0] * H * H) * sizeof(float))
                          : Tensor(DType::f32, {1, M, H, H});
  for (int64_t s = 0; s < M; ++s) {
    const int obj = slots[size_t(s)];
    if (obj < 0) continue;  // mux leaves empty and removed slots at 0
    if (!identity)
      std::memcpy(masks.data<float>() + s * H * H, masks_f.data<float>() + obj * H * H, size_t(H * H) * sizeof(float));
    slot_valid.data<float>()[s] = 1.0f;
    slot_cond.data<float>()[s] = conditioning_objects.count(obj) ? 1.0f : 0.0f;
    slot_score.data<float>()[s] = scores_f.data<float>()[obj];
  }
  namespace me = names::memory_encoder;
  return {{me::kPixFeat, as_f32(pix_feat)},
          {me::kMaskLogits, masks},
          {me::kSlotValid, slot_valid},
          {me::kSlotConditioning, slot_cond},
          {me::kSlotObjectScore, slot_score}};
}

Tensor stack_buckets(const std::vector<Tensor>& per_bucket) {
  SEGMUX_CHECK(!per_bucket.empty(), "stack_buckets: no tensors");
  const Tensor& first = per_bucket[0];
  SEGMUX_CHECK(first.rank() >= 1 && first.dim(0) == 1, "stack_buckets: expected (1, ...) tensors, got ",
               shape_str(first.shape()));
  Shape sh = first.shape();
  sh[0] = int64_t(per_bucket.size());
  Tensor out(first.dtype(), sh);
  for (size_t b = 0; b < per_bucket.size(); ++b) {
    SEGMUX_CHECK(per_bucket[b].shape() == first.shape() && per_bucket[b].dtype() == first.dtype(),
                 "stack_buckets: bucket ", b, " has ", shape_str(per_bucket[b].shape()), " vs ",
                 shape_str(first.shape()));
    copy_slice(per_bucket[b], 0, out, int64_t(b));
  }
  return out;
}

Tensor seq_first_to_nchw(const Tensor& t, int64_t grid) {
  SEGMUX_CHECK(t.rank() == 3 && t.dim(1) == 1 && t.dim(0) == grid * grid, "seq-first features ", shape_str(t.shape()),
               " are not (", grid * grid, ", 1, D)");
  return permute(t, {1, 2, 0}).reshaped({1, t.dim(2), grid, grid});
}

MultiplexAssignment parse_multiplex_state(const std::string& json_text) {
  nlohmann::json j = parse_untrusted_json(json_text, "multiplex state");
  SEGMUX_CHECK(j.is_object() && j.contains("assignments") && j["assignments"].is_array(),
               "multiplex state JSON has no \"assignments\" list");
  MultiplexAssignment a;
  for (auto& bucket : j["assignments"]) {
    SEGMUX_CHECK(bucket.is_array(), "multiplex state: a bucket is not a list");
    std::vector<int> slots;
    for (auto& v : bucket) {
      SEGMUX_CHECK(v.is_number_integer(), "multiplex state: slot value is not an integer");
      slots.push_back(v.get<int>());
    }
    a.buckets.push_back(std::move(slots));
  }
  return a;
}

}  // namespace segmux::sam31
