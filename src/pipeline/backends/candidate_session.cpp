// One video's session on a CandidateModel: its text encodings, frame features and tracker memories
// (sam31::TrackerMemory per state, mux space); every candidate run goes through the shared model.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "core/error.h"
#include "core/tensor_ops.h"
#include "io/safetensors.h"
#include "ir/builder.h"
#include "models/sam31/memory_bank.h"
#include "models/sam31/point_decoder.h"
#include "models/sam31/tensor_names.h"
#include "models/sam31/tracker_io.h"
#include "pipeline/backends/candidate_parts.h"
#include "pipeline/masks/mask_ops.h"
#include "pipeline/media/preprocess.h"
#include "runtime/interpreter.h"

namespace segmux::pipeline {

using sam31::demux_objects;
using sam31::ModelConfig;
using sam31::MultiplexAssignment;
using sam31::mux_objects;
using sam31::pad_buckets;

namespace {

constexpr float kNoObjScore = -1024.0f;

// torch F.interpolate(bilinear, antialias=True, align_corners=False) through our own kernel.
class AntialiasResizer {
 public:
  Tensor run(const Tensor& x, int64_t h, int64_t w) {  // x f32 [N, C, H, W]
    auto key = std::make_tuple(x.shape(), h, w);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) {
      ir::Graph g;
      ir::GraphBuilder b(g);
      int in = b.input("x", DType::f32, x.shape());
      int y = b.op1("ResizeAntialias", {in}, {{"sizes", std::vector<int64_t>{h, w}}}, "segmux");
      b.output(y, "y");
      it = sessions_.emplace(key, std::make_unique<Interpreter>(std::move(g), InterpreterOptions{1, false})).first;
    }
    return it->second->run({{"x", x}}).at("y");
  }

 private:
  std::map<std::tuple<Shape, int64_t, int64_t>, std::unique_ptr<Interpreter>> sessions_;
};

struct FrameFeatures {
  Tensor det_fpn[3];
  Tensor pos2;
  Tensor interactive0, interactive1, interactive2;  // levels 0 / 1 for point prompts only
  Tensor propagation2;
  Tensor high_res_s0, high_res_s1;
  // From the levels rounded to bf16 (interactive propagation); undefined in models compiled before.
  Tensor cached_high_res_s0, cached_high_res_s1;
  int video_width = 0, video_height = 0;
};

class CandidateSession : public ModelSession {
 public:
  explicit CandidateSession(std::shared_ptr<CandidateModel> model)
      : model_(std::move(model)), cfg_(model_->config()), window_(sam31::memory_window(cfg_)) {}

  ModelGeometry geometry() const override { return model_->geometry(); }

  void run_backbone(int frame_index, const RgbFrame& frame) override {
    if (frames_.count(frame_index)) return;
    run_backbone_input(frame_index, preprocess_frame(frame, cfg_.image_size), frame.width, frame.height);
  }

  void run_backbone_input(int frame_index, const Tensor& image, int width, int height) override {
    auto out = model_->run_backbone(image);
    namespace bb = sam31::names::backbone;
    FrameFeatures f;
    for (int l = 0; l < 3; ++l) f.det_fpn[l] = out.at(bb::fpn(bb::kDetHead, l));
    f.pos2 = out.at(bb::pos(2));
    f.interactive0 = out.at(bb::fpn(bb::kInteractiveHead, 0));
    f.interactive1 = out.at(bb::fpn(bb::kInteractiveHead, 1));
    f.interactive2 = out.at(bb::fpn(bb::kInteractiveHead, 2));
    f.propagation2 = out.at(bb::fpn(bb::kPropagationHead, 2));
    f.high_res_s0 = out.at(bb::kHighResS0);
    f.high_res_s1 = out.at(bb::kHighResS1);
    if (out.count(bb::kHighResS0Cached) && out.count(bb::kHighResS1Cached)) {
      f.cached_high_res_s0 = out.at(bb::kHighResS0Cached);
      f.cached_high_res_s1 = out.at(bb::kHighResS1Cached);
    }
    f.video_width = width;
    f.video_height = height;
    frames_[frame_index] = std::move(f);
  }

  bool has_frame(int frame_index) const override { return frames_.count(frame_index) != 0; }
  void release_frame(int frame_index) override { frames_.erase(frame_index); }

  void prepare_text(const std::vector<std::string>& text_batch) override {
    if (!text_batch.empty()) text_encoding(text_batch);
  }

  DetectorOutput detect(int frame_index, const std::vector<std::string>& text_batch,
                        const std::vector<sam31::BoxExemplar>& exemplars) override {
    const FrameFeatures& f = features(frame_index);
    SEGMUX_CHECK(!text_batch.empty(), "detect: no text to ground (add a prompt first)");
    namespace det = sam31::names::detector;
    std::map<std::string, Tensor> in = sam31::detector_box_inputs(cfg_, exemplars);  // names a bad box
    const TextEncoding& text = text_encoding(text_batch);
    in.insert({{det::fpn(0), f.det_fpn[0]},
               {det::fpn(1), f.det_fpn[1]},
               {det::fpn(2), f.det_fpn[2]},
               {det::kPos2, f.pos2},
               {det::kLanguageFeatures, text.features},
               {det::kLanguageMask, text.mask},
               {det::kTextIds, Tensor::from_vector<int64_t>({1}, {0})}});
    auto out = model_->run(Candidate::detector, in);
    DetectorOutput d;
    const Tensor& logits = out.at(det::kPredLogits);
    d.pred_logits = logits.reshaped({logits.numel()});
    const Tensor& boxes = out.at(det::kPredBoxesXyxy);
    d.boxes_xyxy = boxes.reshaped({boxes.dim(1), 4});
    const Tensor& masks = out.at(det::kPredMasks);
    d.mask_logits = masks.reshaped({masks.dim(1), masks.dim(2), masks.dim(3)});
    d.presence_logit = out.at(det::kPresenceLogit).reshaped({1});
    return d;
  }

  TrackerOutput propagate(const TrackerStateView& state, int t, bool reverse) override {
    sam31::TrackerMemory& sm = states_[state.state_id];
    sync_frame_kinds(sm, state);
    // The frame count as the caller knows it now: a live stream's grows from call to call.
    SEGMUX_CHECK(state.num_frames > t, "propagate: frame ", t, " is beyond the ", state.num_frames,
                 " frames the state view reports");
    MultiplexAssignment a{state.buckets};
    const int M = cfg_.multiplex_count;
    const int64_t n = int64_t(state.obj_ids.size());
    if (!input_objects(state, t).empty() && sm.outputs.count(t)) {
      // A frame where masks were given holds stored outputs (official: no decoder run there).
      return data_outputs(a, sm.outputs[t], n);
    }
    const FrameFeatures& f = features(t);
    // The interactive propagation reads the session's cached features, kept in bf16 (level 2, and
    // levels 0 / 1 before the high-resolution convolutions).
    sam31::CurrentFrameFeatures cur{f.propagation2, f.pos2, f.high_res_s0, f.high_res_s1};
    if (state.tracker_only) {
      cur.image = round_to_bf16(f.propagation2);
      if (f.cached_high_res_s0.defined()) {
        cur.high_res_s0 = f.cached_high_res_s0;
        cur.high_res_s1 = f.cached_high_res_s1;
      }
    }
    sam31::MemorySelectionOptions opt;
    opt.track_in_reverse = reverse;
    std::vector<std::map<std::string, Tensor>> outs;
    for (int b = 0; b < a.num_buckets(); ++b) {
      auto in = sam31::assemble_propagation_inputs(cfg_, sm.bank, a, b, t, state.num_frames, cur, opt);
      // Debug aid for parity work: SEGMUX_DEBUG_DUMP=DIR writes every propagation input set.
      if (const char* dump = std::getenv("SEGMUX_DEBUG_DUMP")) {
        std::vector<std::pair<std::string, Tensor>> v(in.tensors.begin(), in.tensors.end());
        write_safetensors(std::string(dump) + "/prop_f" + std::to_string(t) + "_b" + std::to_string(b) + ".safetensors",
                          v);
      }
      outs.push_back(model_->run(Candidate::propagation_decoder, in.tensors));
    }
    sam31::PropagationResult r = sam31::demux_propagation_outputs(cfg_, a, outs);
    sam31::FrameTrackerOutputs p;
    const int64_t hm = cfg_.low_res_mask_size();
    p.low_res = mux_objects(a, M, r.low_res_masks.reshaped({n, hm, hm}));
    p.scores = mux_objects(a, M, r.object_score_logits.reshaped({n}));
    p.stored_obj_ptr = r.stored_obj_ptr;
    sm.outputs[t] = p;
    sm.cond_objects.erase(t);  // a tracked output has no conditioning entries
    return data_outputs(a, p, n);
  }

  void encode_memory(const TrackerStateView& state, int t, const Tensor& masks, const Tensor& scores) override {
    sam31::TrackerMemory& sm = states_[state.state_id];
    MultiplexAssignment a{state.buckets};
    const FrameFeatures& f = features(t);
    const int64_t n = int64_t(state.obj_ids.size()), hi = masks.dim(1);
    sync_frame_kinds(sm, state);
    // Objects that received a mask input on this frame keep their conditioning channel.
    std::set<int> cond_idx = input_objects(state, t);
    // The interactive propagation stores the outputs of a frame without inputs as a non-conditioning
    // frame even where the frame is (also) a conditioning frame (official propagate_in_video).
    const bool cond = sm.bank.cond_frames.count(t) != 0 && !(state.tracker_only && cond_idx.empty());
    Tensor pix = state.tracker_only ? round_to_bf16(f.propagation2) : f.propagation2;
    Tensor mask_in = as_f32(masks).reshaped({n, 1, hi, hi});
    if (state.tracker_only) {
      // track_step's memory: the decoder's masks at the image size, as they are
      // (non_overlap_masks_for_mem_enc is false in SAM 3.1; it matters for a state of several entries,
      // e.g. an object a mask appended again).
      SEGMUX_CHECK(hi == cfg_.image_size, "encode_memory: interactive propagation masks must be ", cfg_.image_size,
                   " px, got ", hi);
    }
    Tensor maskmem =
        run_memory_encoder(state.tracker_only ? Candidate::memory_encoder_image_size : Candidate::memory_encoder, a,
                           pix, mask_in, as_f32(scores).reshaped({n, 1}), cond_idx);
    if (cond) {
      sm.bank.cond_frames[t].maskmem_features = maskmem;
      return;
    }
    sam31::StoredFrame sf;
    sf.maskmem_features = maskmem;
    sf.image_features = pix;
    auto it = sm.outputs.find(t);
    SEGMUX_CHECK(it != sm.outputs.end(), "encode_memory on frame ", t, " before the state was propagated there");
    sf.obj_ptr = it->second.stored_obj_ptr;
    sm.store(t, std::move(sf), false, window_);
  }

  void add_masks(const TrackerStateView& state, int t, const std::vector<int64_t>& obj_ids, const Tensor& masks,
                 MaskInputKind /*kind: new objects and reconditioning take the same path*/,
                 bool conditioning) override {
    sam31::TrackerMemory& sm = states_[state.state_id];
    if (!conditioning && sm.bank.cond_frames.count(t)) {
      // Masks given on a frame that is already a conditioning frame of this state without making it
      // one (reconditioning there, or new objects on the add_prompt frame when the propagation runs it
      // again): the official preflight drops the non-conditioning output of a frame that has a
      // conditioning output, so the memory does not change; but add_new_masks_to_existing_state /
      // recondition_masks_in_existing_state first wrote the objects' pointers from the mask-as-output
      // path into that conditioning output in place, and later frames read them.
      update_cond_frame_pointers(sm.bank.cond_frames[t], state, t, obj_ids, masks);
      return;
    }
    const int64_t hi = cfg_.input_mask_size();
    SEGMUX_CHECK(
        masks.rank() == 3 && masks.dim(0) == int64_t(obj_ids.size()) && masks.dim(1) == hi && masks.dim(2) == hi,
        "add_masks: masks ", shape_str(masks.shape()), " for ", obj_ids.size(), " objects at ", hi);
    // The given masks at video resolution: official add_new_masks resizes them there, then > 0.5.
    const FrameFeatures& f = features(t);
    const Tensor mask_f = as_f32(masks);
    Tensor video_given =
        resizer_.run(mask_f.reshaped({1, int64_t(obj_ids.size()), hi, hi}), f.video_height, f.video_width);
    std::vector<std::vector<uint8_t>> given_bin(obj_ids.size());
    const size_t vplane = size_t(f.video_height) * size_t(f.video_width);
    for (size_t k = 0; k < obj_ids.size(); ++k) {
      given_bin[k].resize(vplane);
      for (size_t i = 0; i < vplane; ++i) given_bin[k][i] = video_given.data<float>()[k * vplane + i] > 0.5f;
    }
    add_given_masks(state, t, obj_ids, mask_f, given_bin, conditioning);
  }

  void add_mask_prompt(const TrackerStateView& state, int t, int64_t obj_id, const Tensor& input_mask,
                       const Tensor& video_mask, bool conditioning) override {
    const int64_t hi = cfg_.input_mask_size();
    const FrameFeatures& f = features(t);
    SEGMUX_CHECK(input_mask.rank() == 3 && input_mask.dim(0) == 1 && input_mask.dim(1) == hi && input_mask.dim(2) == hi,
                 "add_mask_prompt: input mask ", shape_str(input_mask.shape()), ", expected [1, ", hi, ", ", hi, "]");
    SEGMUX_CHECK(video_mask.rank() == 3 && video_mask.dim(0) == 1 && video_mask.dim(1) == f.video_height &&
                     video_mask.dim(2) == f.video_width,
                 "add_mask_prompt: video mask ", shape_str(video_mask.shape()), " for a video of ", f.video_width, "x",
                 f.video_height);
    sam31::TrackerMemory& sm = states_[state.state_id];
    const auto first = std::find(state.obj_ids.begin(), state.obj_ids.end(), obj_id);
    if (first != state.obj_ids.end() && first + 1 != state.obj_ids.end() && state.obj_ids.back() == obj_id) {
      append_object_entry(state, t, int(first - state.obj_ids.begin()), as_f32(input_mask), as_f32(video_mask),
                          conditioning);
      return;
    }
    if (!conditioning && sm.bank.cond_frames.count(t)) {  // as add_masks: the same official add_new_masks
      update_cond_frame_pointers(sm.bank.cond_frames[t], state, t, {obj_id}, input_mask);
      return;
    }
    const Tensor v = as_f32(video_mask);
    std::vector<std::vector<uint8_t>> given_bin(1, std::vector<uint8_t>(size_t(v.numel())));
    for (size_t i = 0; i < given_bin[0].size(); ++i) given_bin[0][i] = v.data<float>()[i] > 0.5f;
    add_given_masks(state, t, {obj_id}, as_f32(input_mask), given_bin, conditioning);
  }

  // A mask for an object the state already holds (official add_new_masks ->
  // add_new_masks_to_existing_state, then the preflight): the view's last entry is the object appended
  // again (`row` its first entry). The frame's stored outputs gain that entry: the mask-as-output logits
  // (mask * 20 - 10, antialiased to low resolution), the interactive decoder's pointer and score; the
  // object's own entry keeps its tracked score and pointer. The frame's memory is then encoded as the
  // preflight consolidates it: the object's entry from the given mask at video resolution, the state's
  // other objects from their own outputs, the appended entries from the frame's outputs upsampled to
  // the video, made non-overlapping there (before the given mask is written in) and antialiased back;
  // the appended entry is a conditioning object of the frame.
  void append_object_entry(const TrackerStateView& state, int t, int row, const Tensor& mask_f, const Tensor& video_f,
                           bool conditioning) {
    sam31::TrackerMemory& sm = states_[state.state_id];
    MultiplexAssignment a{state.buckets};
    // Outputs of a frame beyond the memory window are no longer kept: made again from the memory bank
    // (as for a click there), the appended entry's row included (overwritten below).
    if (!sm.outputs.count(t)) propagate(state, t, false);
    const FrameFeatures& f = features(t);
    const int M = cfg_.multiplex_count;
    const int64_t n = int64_t(state.obj_ids.size()), e = n - 1, hm = cfg_.low_res_mask_size(),
                  hi = cfg_.input_mask_size(), D = cfg_.d_model;
    const sam31::FrameTrackerOutputs& prev = sm.outputs[t];
    Tensor low = demux_objects(a, M, pad_buckets(prev.low_res, a.num_buckets()), n);
    Tensor scores = demux_objects(a, M, pad_buckets(prev.scores, a.num_buckets()), n);
    Tensor ptrs = demux_objects(a, M, pad_buckets(prev.stored_obj_ptr, a.num_buckets()), n);
    namespace id = sam31::names::interactive_decoder;
    auto out = model_->run(Candidate::interactive_decoder,
                           {{id::kImage, f.interactive2}, {id::kMask, mask_f.reshaped({1, 1, hi, hi})}});
    std::memcpy(ptrs.data<float>() + size_t(e * D), out.at(id::kObjPtr).data<float>(), size_t(D) * 4);
    scores.data<float>()[e] = out.at(id::kObjectScoreLogit).data<float>()[0];
    Tensor logits = mask_f.reshaped({1, 1, hi, hi}).clone();
    for (int64_t i = 0; i < logits.numel(); ++i) logits.data<float>()[i] = logits.data<float>()[i] * 20.0f - 10.0f;
    Tensor low_new = resizer_.run(logits, hm, hm);
    std::memcpy(low.data<float>() + size_t(e * hm * hm), low_new.data<float>(), size_t(hm * hm) * 4);
    if (!conditioning && sm.bank.cond_frames.count(t)) {
      // A conditioning frame the state has tracked since: the preflight's output of the frame is dropped
      // for the conditioning one, which add_new_masks_to_existing_state extended in place (memory kept).
      sam31::StoredFrame& sf = sm.bank.cond_frames[t];
      if (sf.obj_ptr.defined()) {
        Tensor cp = demux_objects(a, M, pad_buckets(sf.obj_ptr, a.num_buckets()), n);
        std::memcpy(cp.data<float>() + size_t(e * D), out.at(id::kObjPtr).data<float>(), size_t(D) * 4);
        sf.obj_ptr = mux_objects(a, M, cp);
      }
      sm.outputs[t] = {mux_objects(a, M, low), mux_objects(a, M, scores), mux_objects(a, M, ptrs)};
      sm.cond_objects[t].insert(int(e));
      return;
    }
    Tensor low_c = consolidate_appended(low, row, video_f, first_appended_entry(state), f.video_height, f.video_width);
    std::set<int> cond = sm.cond_objects[t];  // the frame's earlier conditioning entries (none if tracked)
    cond.insert(int(e));
    store_consolidated_frame(sm, a, t, low_c, scores, ptrs, cond, conditioning);
  }

  // Index of the first appended entry (an object id seen before in the view), or the entry count.
  static int64_t first_appended_entry(const TrackerStateView& state) {
    std::set<int64_t> seen;
    for (size_t i = 0; i < state.obj_ids.size(); ++i)
      if (!seen.insert(state.obj_ids[i]).second) return int64_t(i);
    return int64_t(state.obj_ids.size());
  }

  // The preflight's low-resolution masks of a frame given a mask for entry `row` (official
  // _consolidate_temp_output_across_obj over add_new_masks' video-resolution outputs).
  Tensor consolidate_appended(const Tensor& low, int row, const Tensor& video_f, int64_t appended, int vh, int vw) {
    const int64_t n = low.dim(0), hm = low.dim(1);
    const size_t vplane = size_t(vh) * size_t(vw);
    Tensor video(DType::f32, {n, 1, vh, vw});
    for (int64_t j = 0; j < n; ++j)
      resize_bilinear(low.data<float>() + size_t(j * hm * hm), int(hm), int(hm),
                      video.data<float>() + size_t(j) * vplane, vh, vw);
    apply_non_overlapping_constraints(video);  // non_overlap_masks_for_output, before the given mask
    float* given = video.data<float>() + size_t(row) * vplane;
    for (size_t i = 0; i < vplane; ++i) given[i] = video_f.data<float>()[i] > 0.5f ? -kNoObjScore : kNoObjScore;
    Tensor down = resizer_.run(video.reshaped({1, n, vh, vw}), hm, hm).reshaped({n, hm, hm});
    // The state's objects other than the given one keep their own low-resolution outputs.
    for (int64_t j = 0; j < appended; ++j)
      if (j != row)
        std::memcpy(down.data<float>() + size_t(j * hm * hm), low.data<float>() + size_t(j * hm * hm),
                    size_t(hm * hm) * 4);
    return down;
  }

  // Official add_new_masks + preflight: `mask_f` f32 [K, Hi, Wi] the mask-as-output inputs, `given_bin`
  // the same masks binarised at video resolution.
  void add_given_masks(const TrackerStateView& state, int t, const std::vector<int64_t>& obj_ids, const Tensor& mask_f,
                       const std::vector<std::vector<uint8_t>>& given_bin, bool conditioning) {
    sam31::TrackerMemory& sm = states_[state.state_id];
    MultiplexAssignment a{state.buckets};
    const FrameFeatures& f = features(t);
    const int M = cfg_.multiplex_count;
    const int64_t n = int64_t(state.obj_ids.size()), hm = cfg_.low_res_mask_size(), hi = cfg_.input_mask_size(),
                  D = cfg_.d_model;
    // Current data-space outputs of the state on this frame (objects without any get "absent").
    Tensor low(DType::f32, {n, hm, hm}), scores(DType::f32, {n}), ptrs(DType::f32, {n, D});
    for (int64_t i = 0; i < low.numel(); ++i) low.data<float>()[i] = kNoObjScore;
    for (int64_t i = 0; i < n; ++i) scores.data<float>()[i] = -10.0f;
    const bool tracked_here = sm.outputs.count(t) != 0;
    if (auto it = sm.outputs.find(t); it != sm.outputs.end()) {
      low = demux_objects(a, M, it->second.low_res, n);
      scores = demux_objects(a, M, it->second.scores, n);
      ptrs = demux_objects(a, M, it->second.stored_obj_ptr, n);
    }
    std::vector<int> rows;
    for (size_t k = 0; k < obj_ids.size(); ++k) {
      int row = -1;
      for (size_t i = 0; i < state.obj_ids.size(); ++i)
        if (state.obj_ids[i] == obj_ids[k]) row = int(i);
      SEGMUX_CHECK(row >= 0, "add_masks: object ", obj_ids[k], " is not in tracker state ", state.state_id);
      rows.push_back(row);
      Tensor mk = take(mask_f, 0, int64_t(k), 1).reshaped({1, 1, hi, hi});
      namespace id = sam31::names::interactive_decoder;
      auto out = model_->run(Candidate::interactive_decoder, {{id::kImage, f.interactive2}, {id::kMask, mk}});
      std::memcpy(ptrs.data<float>() + size_t(row) * size_t(D), out.at(id::kObjPtr).data<float>(), size_t(D) * 4);
      scores.data<float>()[row] = out.at(id::kObjectScoreLogit).data<float>()[0];
    }

    // Memory of this frame as the official preflight encodes it: masks at video resolution (the given
    // masks binarised there, each suppressed by the other given masks; objects that received an input
    // on this frame earlier by all of them; objects only tracked here are left as tracked: official
    // add_new_masks suppresses the objects that have a temporary output on the frame), antialiased to
    // low resolution, upsampled to the image size, made non-overlapping.
    const int vh = f.video_height, vw = f.video_width;
    std::set<int> given(rows.begin(), rows.end());
    const std::set<int> had_input = input_objects(state, t);
    const size_t vplane = size_t(vh) * size_t(vw);
    Tensor video(DType::f32, {1, n, vh, vw});
    float* vd = video.data<float>();
    for (int64_t j = 0; j < n; ++j) {
      float* plane = vd + size_t(j) * vplane;
      auto gi = std::find(rows.begin(), rows.end(), int(j));
      if (gi != rows.end()) {
        const auto& m = given_bin[size_t(gi - rows.begin())];
        for (size_t i = 0; i < vplane; ++i) plane[i] = m[i] ? -kNoObjScore : kNoObjScore;
      } else {
        resize_bilinear(low.data<float>() + size_t(j) * size_t(hm * hm), int(hm), int(hm), plane, vh, vw);
        if (!had_input.count(int(j))) continue;
      }
      for (size_t k = 0; k < obj_ids.size(); ++k) {
        if (gi != rows.end() && size_t(gi - rows.begin()) == k) continue;
        for (size_t i = 0; i < vplane; ++i)
          if (given_bin[k][i]) plane[i] = kNoObjScore;
      }
    }
    Tensor low_c = resizer_.run(video, hm, hm).reshaped({n, hm, hm});
    // Objects only tracked on this frame keep their tracked low-resolution logits as they are: the
    // official low-resolution consolidation takes each object's own output of the frame, and theirs is
    // the tracker's (not the video-resolution round trip above, which moves boundary pixels).
    if (tracked_here)
      for (int64_t j = 0; j < n; ++j)
        if (!given.count(int(j)) && !had_input.count(int(j)))
          std::memcpy(low_c.data<float>() + size_t(j * hm * hm), low.data<float>() + size_t(j * hm * hm),
                      size_t(hm * hm) * sizeof(float));
    // The objects given masks here are this frame's conditioning objects, whether or not the frame
    // becomes a conditioning frame (official: mask_as_output marks every object of its batch).
    store_consolidated_frame(sm, a, t, low_c, scores, ptrs, given, conditioning);
  }

  TrackerOutput add_points(const TrackerStateView& state, int t, int64_t obj_id, const PointInputs& points,
                           bool conditioning) override {
    sam31::TrackerMemory& sm = states_[state.state_id];
    MultiplexAssignment a{state.buckets};
    const FrameFeatures& f = features(t);
    const int M = cfg_.multiplex_count;
    const int64_t n = int64_t(state.obj_ids.size()), hm = cfg_.low_res_mask_size(), D = cfg_.d_model;
    auto at = std::find(state.obj_ids.begin(), state.obj_ids.end(), obj_id);
    SEGMUX_CHECK(at != state.obj_ids.end(), "add_points: object ", obj_id, " is not in tracker state ", state.state_id);
    const int row = int(at - state.obj_ids.begin());
    // The other objects of the state keep their outputs of this frame; when those are gone (an
    // ordinary frame the propagation has moved past) they are computed again from the memory bank.
    if (n > 1 && sm.has_memory() && !sm.outputs.count(t)) propagate(state, t, false);
    const auto in = sam31::point_decoder_prompt_inputs(cfg_, sam31::PointPrompt{points.xy, points.labels});
    namespace pt = sam31::names::point_decoder;
    auto out = model_->run(Candidate::point_decoder, {{pt::kImage, f.interactive2},
                                                      {pt::kFpn0, f.interactive0},
                                                      {pt::kFpn1, f.interactive1},
                                                      {pt::kPointCoords, in.coords},
                                                      {pt::kPointLabels, in.labels},
                                                      {pt::kPointValid, in.valid},
                                                      {pt::kMultimask, in.multimask}});
    // The state's outputs of this frame, the clicked object's replaced (others without any: absent).
    Tensor low(DType::f32, {n, hm, hm}), scores(DType::f32, {n}), ptrs(DType::f32, {n, D});
    for (int64_t i = 0; i < low.numel(); ++i) low.data<float>()[i] = kNoObjScore;
    for (int64_t i = 0; i < n; ++i) scores.data<float>()[i] = -10.0f;
    if (auto it = sm.outputs.find(t); it != sm.outputs.end()) {
      low = demux_objects(a, M, it->second.low_res, n);
      scores = demux_objects(a, M, it->second.scores, n);
      ptrs = demux_objects(a, M, it->second.stored_obj_ptr, n);
    }
    const Tensor& mask = out.at(pt::kLowResMask);
    std::memcpy(low.data<float>() + size_t(row) * size_t(hm * hm), mask.data<float>(), size_t(hm * hm) * 4);
    scores.data<float>()[row] = out.at(pt::kObjectScoreLogit).data<float>()[0];
    std::memcpy(ptrs.data<float>() + size_t(row) * size_t(D), out.at(pt::kObjPtr).data<float>(), size_t(D) * 4);
    store_consolidated_frame(sm, a, t, low, scores, ptrs, {row}, conditioning, /*cached_features=*/true);
    return {mask.reshaped({1, hm, hm}).clone(), Tensor::from_vector<float>({1}, {scores.data<float>()[row]})};
  }

  ImagePromptOutput predict_image_prompt(int t, const PointInputs& points, const Tensor& mask_input) override {
    const FrameFeatures& f = features(t);
    const int64_t hm = cfg_.low_res_mask_size();
    auto in = sam31::point_decoder_prompt_inputs(cfg_, sam31::PointPrompt{points.xy, points.labels});
    if (points.labels.empty())  // no points: no sparse token at all (not even SAM's pad point)
      for (int64_t i = 0; i < in.valid.numel(); ++i) in.valid.data<float>()[i] = 0.0f;
    in.multimask.data<float>()[0] = 0.0f;  // best_mask_index = the single-mask choice
    Tensor mask(DType::f32, {1, 1, hm, hm}), given = Tensor::from_vector<float>({1}, {0.0f});
    std::memset(mask.raw(), 0, mask.nbytes());
    if (mask_input.defined()) {
      SEGMUX_CHECK(mask_input.dtype() == DType::f32 && mask_input.numel() == hm * hm, "mask input of shape ",
                   shape_str(mask_input.shape()), ": expected f32 [1, ", hm, ", ", hm, "]");
      std::memcpy(mask.raw(), mask_input.raw(), mask.nbytes());
      given.data<float>()[0] = 1.0f;
    }
    namespace pt = sam31::names::point_decoder;
    auto out = model_->run(Candidate::point_decoder_mask_input, {{pt::kImage, f.interactive2},
                                                                 {pt::kFpn0, f.interactive0},
                                                                 {pt::kFpn1, f.interactive1},
                                                                 {pt::kPointCoords, in.coords},
                                                                 {pt::kPointLabels, in.labels},
                                                                 {pt::kPointValid, in.valid},
                                                                 {pt::kMultimask, in.multimask},
                                                                 {pt::kMaskInput, mask},
                                                                 {pt::kMaskInputValid, given}});
    const Tensor& masks = out.at(pt::kMasks);
    return {masks.reshaped({masks.dim(1), hm, hm}).clone(), out.at(pt::kIouPred).reshaped({masks.dim(1)}).clone(),
            int(out.at(pt::kBestMaskIndex).data<int64_t>()[0])};
  }

  // The stored pointers of a conditioning frame, for the objects given masks there: the interactive
  // decoder's pointer of each mask (mux space, the state's current layout).
  void update_cond_frame_pointers(sam31::StoredFrame& sf, const TrackerStateView& state, int t,
                                  const std::vector<int64_t>& obj_ids, const Tensor& masks) {
    if (!sf.obj_ptr.defined()) return;
    const MultiplexAssignment a{state.buckets};
    const int M = cfg_.multiplex_count;
    const int64_t n = int64_t(state.obj_ids.size()), hi = cfg_.input_mask_size(), D = cfg_.d_model;
    SEGMUX_CHECK(sf.obj_ptr.dim(0) <= a.num_buckets(), "add_masks: frame ", t, " stores pointers of ",
                 sf.obj_ptr.dim(0), " buckets, the state has ", a.num_buckets());
    Tensor ptrs = demux_objects(a, M, pad_buckets(sf.obj_ptr, a.num_buckets()), n);
    const FrameFeatures& f = features(t);
    const Tensor mask_f = as_f32(masks);
    for (size_t k = 0; k < obj_ids.size(); ++k) {
      const auto at = std::find(state.obj_ids.begin(), state.obj_ids.end(), obj_ids[k]);
      SEGMUX_CHECK(at != state.obj_ids.end(), "add_masks: object ", obj_ids[k], " is not in tracker state ",
                   state.state_id);
      namespace id = sam31::names::interactive_decoder;
      auto out = model_->run(
          Candidate::interactive_decoder,
          {{id::kImage, f.interactive2}, {id::kMask, take(mask_f, 0, int64_t(k), 1).reshaped({1, 1, hi, hi})}});
      std::memcpy(ptrs.data<float>() + size_t(at - state.obj_ids.begin()) * size_t(D),
                  out.at(id::kObjPtr).data<float>(), size_t(D) * 4);
    }
    sf.obj_ptr = mux_objects(a, M, ptrs);
  }

  // A frame whose outputs were given (masks, points): they become the state's outputs there and its
  // memory as the official preflight encodes it (low-res masks upsampled to the image size,
  // non-overlapping; `cond_objects` = the frame's conditioning objects).
  // `cached_features`: the frame's features come from the session cache (point prompts), whose
  // level-2 features are bf16, so the bank keeps them so.
  void store_consolidated_frame(sam31::TrackerMemory& sm, const MultiplexAssignment& a, int t, const Tensor& low_c,
                                const Tensor& scores, const Tensor& ptrs, const std::set<int>& cond_objects,
                                bool conditioning, bool cached_features = false) {
    const FrameFeatures& f = features(t);
    const int M = cfg_.multiplex_count;
    const int64_t n = low_c.dim(0), hm = cfg_.low_res_mask_size();
    sam31::FrameTrackerOutputs p{mux_objects(a, M, low_c), mux_objects(a, M, scores), mux_objects(a, M, ptrs)};
    sm.outputs[t] = p;
    sm.cond_objects[t] = cond_objects;
    const int S = cfg_.image_size;
    Tensor high(DType::f32, {n, 1, S, S});
    for (int64_t j = 0; j < n; ++j)
      resize_bilinear(low_c.data<float>() + size_t(j) * size_t(hm * hm), int(hm), int(hm),
                      high.data<float>() + size_t(j) * size_t(S) * size_t(S), S, S);
    apply_non_overlapping_constraints(high);
    Tensor pix = round_to_bf16(f.propagation2);
    Tensor maskmem =
        run_memory_encoder(Candidate::memory_encoder_image_size, a, pix, high, scores.reshaped({n, 1}), cond_objects);
    sam31::StoredFrame sf;
    sf.maskmem_features = maskmem;
    // Detector masks: the bank keeps fp32 image features (only the encoder input is bf16).
    sf.image_features = cached_features ? pix : f.propagation2;
    sf.obj_ptr = p.stored_obj_ptr;
    sm.store(t, std::move(sf), conditioning, window_);
  }

  void extract_object(const TrackerStateView& source, const TrackerStateView& singleton, int64_t obj_id) override {
    const auto at = std::find(source.obj_ids.begin(), source.obj_ids.end(), obj_id);
    SEGMUX_CHECK(at != source.obj_ids.end() && singleton.obj_ids == std::vector<int64_t>{obj_id},
                 "extract_object: object ", obj_id, " is not in tracker state ", source.state_id);
    const int64_t row = at - source.obj_ids.begin(), n = int64_t(source.obj_ids.size());
    const MultiplexAssignment src_a{source.buckets}, dst_a{singleton.buckets};
    sam31::TrackerMemory extracted =
        states_[source.state_id].extract_object(src_a, n, row, dst_a, cfg_.multiplex_count);
    states_[singleton.state_id] = std::move(extracted);
  }

  void relayout_refined_object(const TrackerStateView& before, const TrackerStateView& after, int64_t obj_id) override {
    SEGMUX_CHECK(before.state_id == after.state_id && before.obj_ids == std::vector<int64_t>{obj_id} &&
                     after.obj_ids == before.obj_ids,
                 "relayout_refined_object: state ", before.state_id, " must hold only object ", obj_id);
    const MultiplexAssignment old_a{before.buckets}, new_a{after.buckets};
    states_[before.state_id].relayout_single_object(old_a, new_a, /*row: its only object*/ 0, cfg_.multiplex_count);
  }

  void remove_objects(const TrackerStateView&, const std::vector<int64_t>&) override {
    // Memories are kept in mux space; the removed objects' slots are dead in the state's buckets.
  }
  void drop_state(int state_id) override { states_.erase(state_id); }

 private:
  struct TextEncoding {
    Tensor features, mask;
  };
  // Encodings are kept per text batch: several concepts take turns on every frame.
  const TextEncoding& text_encoding(const std::vector<std::string>& batch) {
    auto it = text_cache_.find(batch);
    if (it != text_cache_.end()) return it->second;
    if (text_cache_.size() >= kMaxCachedTexts) text_cache_.clear();
    auto [features, mask] = model_->encode_text(batch);
    return text_cache_.emplace(batch, TextEncoding{features, mask}).first->second;
  }

  const FrameFeatures& features(int t) const {
    auto it = frames_.find(t);
    SEGMUX_CHECK(it != frames_.end(), "frame ", t, " has no backbone features (run_backbone first)");
    return it->second;
  }

  // Data-space indices of the objects that received a mask input on frame t (control plane's record).
  static std::set<int> input_objects(const TrackerStateView& state, int t) {
    std::set<int> out;
    for (const MemoryFrame& mf : state.memory_frames)
      if (mf.frame_index == t)
        for (int64_t id : mf.input_obj_ids)
          for (size_t i = 0; i < state.obj_ids.size(); ++i)
            if (state.obj_ids[i] == id) out.insert(int(i));
    return out;
  }

  // The control plane decides which frames are conditioning frames: the bank follows.
  static void sync_frame_kinds(sam31::TrackerMemory& sm, const TrackerStateView& state) {
    std::map<int, bool> kinds;
    for (const MemoryFrame& mf : state.memory_frames) kinds[mf.frame_index] = mf.conditioning;
    sm.sync_frame_kinds(kinds);
  }

  TrackerOutput data_outputs(const MultiplexAssignment& a, const sam31::FrameTrackerOutputs& p, int64_t n) const {
    TrackerOutput out;
    out.low_res_masks = demux_objects(a, cfg_.multiplex_count, p.low_res, n);
    out.object_score_logits = demux_objects(a, cfg_.multiplex_count, p.scores, n);
    return out;
  }

  // Per pixel only the highest-scoring object keeps its logit; the others are clamped to <= -10.
  static void apply_non_overlapping_constraints(Tensor& masks) {
    const int64_t n = masks.dim(0), plane = masks.numel() / std::max<int64_t>(n, 1);
    if (n <= 1) return;
    float* d = masks.data<float>();
    for (int64_t i = 0; i < plane; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j)
        if (d[j * plane + i] > d[best * plane + i]) best = j;
      for (int64_t j = 0; j < n; ++j)
        if (j != best) d[j * plane + i] = std::min(d[j * plane + i], -10.0f);
    }
  }

  Tensor run_memory_encoder(Candidate c, const MultiplexAssignment& a, const Tensor& pix, const Tensor& masks,
                            const Tensor& scores, const std::set<int>& cond) {
    std::vector<Tensor> per_bucket;
    for (int b = 0; b < a.num_buckets(); ++b) {
      auto in = sam31::assemble_memory_encoder_inputs(cfg_, a, b, pix, masks, scores, cond);
      per_bucket.push_back(model_->run(c, in).at(sam31::names::memory_encoder::kMaskmemFeaturesBf16));
    }
    return sam31::stack_buckets(per_bucket);
  }

  std::shared_ptr<CandidateModel> model_;
  const ModelConfig& cfg_;
  const int window_;  // sam31::memory_window
  static constexpr size_t kMaxCachedTexts = 64;
  std::map<std::vector<std::string>, TextEncoding> text_cache_;
  std::map<int, FrameFeatures> frames_;
  std::map<int, sam31::TrackerMemory> states_;
  AntialiasResizer resizer_;
};

}  // namespace

std::unique_ptr<ModelSession> new_candidate_session(std::shared_ptr<CandidateModel> model) {
  return std::make_unique<CandidateSession>(std::move(model));
}

}  // namespace segmux::pipeline
