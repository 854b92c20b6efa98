// tracker_io: memory-bank selection against what the official code attended to (the fixtures record
// its concatenated memory tensors), the selection rules on synthetic banks, demux of mux-space decoder
// outputs into the official data-space tensors, memory-encoder muxing, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "models/sam31/config.h"
#include "models/sam31/propagation_decoder.h"
#include "models/sam31/tracker_io.h"
#include "models/sam31/weights.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::sam31;

namespace {

const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

const ModelConfig& cfg() {
  static ModelConfig c = segmux::verify::load_fixture_config(kFixture + "/config.json");
  return c;
}

const Tensor& fx(const TensorFile& f, const std::string& name) {
  if (f.has(name)) return f.at(name);
  return f.at(f.metadata.at("alias:" + name));
}

std::string tag(int frame) {
  char t[16];
  std::snprintf(t, sizeof(t), "f%03d", frame);
  return t;
}

// The fixture's memory bank (propagation_f010: cond frame 0, non-cond frames 1..9).
MemoryBank fixture_bank(const TensorFile& f, const std::vector<int>& cond, const std::vector<int>& non_cond) {
  MemoryBank bank;
  const int64_t g = cfg().token_grid();
  auto load = [&](const std::string& kind, int t) {
    const std::string p = "in.memory_bank." + kind + "." + tag(t) + ".";
    StoredFrame s;
    s.maskmem_features = fx(f, p + "maskmem_features");
    s.image_features = seq_first_to_nchw(fx(f, p + "image_features"), g);
    s.obj_ptr = fx(f, p + "obj_ptr");
    return s;
  };
  for (int t : cond) bank.cond_frames[t] = load("cond_frame_outputs", t);
  for (int t : non_cond) bank.non_cond_frames[t] = load("non_cond_frame_outputs", t);
  return bank;
}

CurrentFrameFeatures fixture_features(const TensorFile& f) {
  const int64_t g = cfg().token_grid();
  CurrentFrameFeatures c;
  c.image = seq_first_to_nchw(fx(f, "in.current_vision_feats.0"), g);
  c.image_pos = seq_first_to_nchw(fx(f, "in.current_vision_pos_embeds.0"), g);
  c.high_res_s0 = fx(f, "in.sam_heads.propagation_high_res_features.0");
  c.high_res_s1 = fx(f, "in.sam_heads.propagation_high_res_features.1");
  return c;
}

// A synthetic frame with the right shapes (1 bucket) whose values encode the frame index.
StoredFrame synthetic_frame(int t) {
  const int64_t D = cfg().d_model, g = cfg().token_grid(), M = cfg().multiplex_count;
  StoredFrame s;
  s.maskmem_features = Tensor(DType::bf16, {1, D, g, g});
  for (int64_t i = 0; i < s.maskmem_features.numel(); ++i)
    s.maskmem_features.data<uint16_t>()[i] = f32_to_bf16(float(t));
  s.image_features = Tensor(DType::f32, {1, D, g, g});
  s.obj_ptr = Tensor(DType::f32, {1, M, D});
  for (int64_t i = 0; i < s.obj_ptr.numel(); ++i) s.obj_ptr.data<float>()[i] = float(t);
  return s;
}

MultiplexAssignment one_bucket(std::vector<int> slots) { return MultiplexAssignment{{std::move(slots)}}; }

}  // namespace

// Frame 10 of the fixture: the official code attended to cond frame 0 and non-cond frames 4..9 (spatial)
// and to pointers of frames 0..9. Our selection must rebuild its memory tensors token for token.
TEST(TrackerIo, SelectionRebuildsTheOfficialMemoryTensors) {
  TensorFile f = read_safetensors(kFixture + "/modules/propagation_f010.safetensors");
  MemoryBank bank = fixture_bank(f, {0}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  MultiplexAssignment a = parse_multiplex_state(f.metadata.at("multiplex_state"));
  PropagationInputs in = assemble_propagation_inputs(cfg(), bank, a, 0, 10, 16, fixture_features(f));

  const auto& sel = in.selection;
  ASSERT_EQ(sel.spatial.size(), 7u);
  EXPECT_EQ(sel.spatial[0].frame_idx, 0);
  EXPECT_TRUE(sel.spatial[0].is_cond);
  EXPECT_EQ(sel.spatial[0].tpos_index, cfg().num_maskmem - 1);  // t_pos 10 is out of range (v2)
  for (int i = 1; i < 7; ++i) {
    EXPECT_EQ(sel.spatial[size_t(i)].frame_idx, 3 + i);
    EXPECT_EQ(sel.spatial[size_t(i)].tpos_index, cfg().num_maskmem - 1 - i);  // oldest first: t_pos = i
  }
  ASSERT_EQ(sel.pointers.size(), 10u);
  EXPECT_EQ(sel.pointers[0].frame_idx, 0);
  EXPECT_FLOAT_EQ(sel.pointers[0].tpos, 10.0f / 15.0f);
  for (int i = 1; i < 10; ++i) {
    EXPECT_EQ(sel.pointers[size_t(i)].frame_idx, 10 - i);
    EXPECT_FLOAT_EQ(sel.pointers[size_t(i)].tpos, float(i) / 15.0f);
  }

  // Tokens: the official memory = [spatial maskmem tokens (slot-major), pointer tokens].
  const Tensor& memory = fx(f, "in.memory_attention.memory");               // (7*L + 40, 1, D)
  const Tensor& image_pos = fx(f, "in.memory_attention.memory_image_pos");  // (7*L, 1, D)
  const Tensor& mem_image = fx(f, "in.memory_attention.memory_image");      // (7*L, 1, D)
  Weights w = Weights::load(kFixture + "/weights.safetensors");
  const Tensor& tpos_enc = w.get("tracker.model.maskmem_tpos_enc");
  const int64_t D = cfg().d_model, L = int64_t(cfg().token_grid()) * cfg().token_grid(), M = cfg().multiplex_count;
  const Tensor& mm = in.tensors.at("memory_maskmem");
  const Tensor& mi = in.tensors.at("memory_image");
  const Tensor& pos = in.tensors.at("image_pos");
  for (int64_t s = 0; s < 7; ++s) {
    EXPECT_EQ(in.tensors.at("memory_valid").data<float>()[s], 1.0f);
    const int64_t idx = in.tensors.at("memory_tpos_index").data<int64_t>()[s];
    for (int64_t l = 0; l < L; l += 7) {
      for (int64_t d = 0; d < D; ++d) {
        const int64_t tok = s * L + l;
        ASSERT_EQ(bf16_to_f32(mm.data<uint16_t>()[(s * D + d) * L + l]), memory.data<float>()[tok * D + d]);
        ASSERT_EQ(mi.data<float>()[(s * D + d) * L + l], mem_image.data<float>()[tok * D + d]);
        const float want = pos.data<float>()[d * L + l] + float(tpos_enc.get_as_double(idx * D + d));
        ASSERT_EQ(want, image_pos.data<float>()[tok * D + d]) << "slot " << s << " token " << l;
      }
    }
  }
  for (int64_t s = 7; s < propagation_memory_slots(cfg()); ++s)
    EXPECT_EQ(in.tensors.at("memory_valid").data<float>()[s], 0.0f);
  const Tensor& ptrs = in.tensors.at("obj_ptrs");
  for (int64_t k = 0; k < 10 * M * D; ++k) ASSERT_EQ(ptrs.data<float>()[k], memory.data<float>()[7 * L * D + k]);
  EXPECT_EQ(in.tensors.at("obj_ptr_valid").data<float>()[9], 1.0f);
  EXPECT_EQ(in.tensors.at("obj_ptr_valid").data<float>()[10], 0.0f);
  // Smaller compiled slot variants: exact fit works, one slot short is an error.
  PropagationInputs fit =
      assemble_propagation_inputs(cfg(), bank, a, 0, 10, 16, fixture_features(f), {}, PropagationSlots{7, 10});
  EXPECT_EQ(fit.tensors.at("memory_maskmem").dim(0), 7);
  EXPECT_EQ(fit.tensors.at("obj_ptrs").dim(0), 10);
  EXPECT_THROW(assemble_propagation_inputs(cfg(), bank, a, 0, 10, 16, fixture_features(f), {}, PropagationSlots{6, 10}),
               Error);
  EXPECT_THROW(assemble_propagation_inputs(cfg(), bank, a, 0, 10, 16, fixture_features(f), {}, PropagationSlots{7, 9}),
               Error);
  // Slot 1 holds a removed object (-1116): output_invalid_embed.
  EXPECT_EQ(in.tensors.at("slot_valid").data<float>()[0], 1.0f);
  EXPECT_EQ(in.tensors.at("slot_valid").data<float>()[1], 0.0f);
}

TEST(TrackerIo, ClosestConditioningFramesAndUnselectedOnesAsMemory) {
  MemoryBank bank;
  for (int t : {0, 3, 8, 11, 12, 30}) bank.cond_frames[t] = synthetic_frame(t);
  for (int t : {9, 10}) bank.non_cond_frames[t] = synthetic_frame(t);
  ASSERT_EQ(cfg().max_cond_frames_in_attn, 4);
  MemorySelection sel = select_memory(cfg(), bank, 10, 40);
  std::vector<int> cond;
  for (auto& s : sel.spatial)
    if (s.is_cond) cond.push_back(s.frame_idx);
  // closest before (8), closest at/after (11), then nearest others (12, then 3 before 0/30).
  EXPECT_EQ(cond, (std::vector<int>{8, 11, 12, 3}));
  // Non-cond memory: frames 9 (t_pos 6) and 4..8 -> only 9 exists; unselected cond 0/30 are outside.
  std::vector<int> non_cond;
  for (auto& s : sel.spatial)
    if (!s.is_cond) non_cond.push_back(s.frame_idx);
  EXPECT_EQ(non_cond, (std::vector<int>{9}));
  // Pointers: the 4 selected cond frames, then frames 9..0 that exist (9 non-cond, 0 unselected cond).
  std::vector<int> ptr_frames;
  for (auto& p : sel.pointers) ptr_frames.push_back(p.frame_idx);
  EXPECT_EQ(ptr_frames, (std::vector<int>{8, 11, 12, 3, 9, 0}));
  EXPECT_EQ(sel.pointers[1].rel_pos, 1);  // |10 - 11|
  // An unselected conditioning frame inside the spatial window is attended as ordinary memory.
  MemoryBank bank2;
  for (int t : {0, 3, 8, 11, 12, 13, 30}) bank2.cond_frames[t] = synthetic_frame(t);
  for (int t : {9, 10}) bank2.non_cond_frames[t] = synthetic_frame(t);
  sel = select_memory(cfg(), bank2, 14, 40);
  std::vector<std::pair<int, bool>> spatial;
  for (auto& s : sel.spatial) spatial.push_back({s.frame_idx, s.is_cond});
  EXPECT_EQ(spatial, (std::vector<std::pair<int, bool>>{
                         {13, true}, {30, true}, {12, true}, {11, true}, {8, false}, {9, false}, {10, false}}));
  ptr_frames.clear();
  for (auto& p : sel.pointers) ptr_frames.push_back(p.frame_idx);
  EXPECT_EQ(ptr_frames, (std::vector<int>{13, 30, 12, 11, 10, 9, 8, 3, 0}));
  // The official "only pointers in the past" option drops future conditioning frames.
  MemorySelectionOptions past;
  past.only_obj_ptrs_in_the_past = true;
  sel = select_memory(cfg(), bank2, 14, 40, past);
  EXPECT_EQ(sel.pointers[1].frame_idx, 12);
}

TEST(TrackerIo, ReverseTrackingLooksForward) {
  MemoryBank bank;
  bank.cond_frames[20] = synthetic_frame(20);
  for (int t = 11; t <= 19; ++t) bank.non_cond_frames[t] = synthetic_frame(t);
  MemorySelectionOptions opt;
  opt.track_in_reverse = true;
  MemorySelection sel = select_memory(cfg(), bank, 10, 21, opt);
  std::vector<int> frames;
  for (auto& s : sel.spatial) frames.push_back(s.frame_idx);
  EXPECT_EQ(frames, (std::vector<int>{20, 16, 15, 14, 13, 12, 11}));
  EXPECT_EQ(sel.spatial[0].tpos_index, cfg().num_maskmem - 1);  // t_pos = (10 - 20) * -1 = 10: out of range
  EXPECT_EQ(sel.pointers.back().frame_idx, 19);
}

TEST(TrackerIo, FramesWithoutMemoryOrPointersAreSkipped) {
  MemoryBank bank;
  bank.cond_frames[0] = synthetic_frame(0);
  bank.non_cond_frames[1] = synthetic_frame(1);
  bank.non_cond_frames[1].maskmem_features = Tensor();
  bank.non_cond_frames[1].obj_ptr = Tensor();
  MemorySelection sel = select_memory(cfg(), bank, 2, 16);
  EXPECT_EQ(sel.spatial.size(), 1u);
  EXPECT_EQ(sel.pointers.size(), 1u);
  MemoryBank empty;
  EXPECT_THROW(select_memory(cfg(), empty, 2, 16), Error);
}

// Demux of the fixture's own mux-space decoder outputs must give its data-space tensors exactly.
TEST(TrackerIo, DemuxGivesTheOfficialDataSpaceOutputs) {
  for (const char* file : {"propagation_f001", "propagation_f010"}) {
    TensorFile f = read_safetensors(kFixture + "/modules/" + file + ".safetensors");
    MultiplexAssignment a = parse_multiplex_state(f.metadata.at("multiplex_state"));
    const int64_t M = cfg().multiplex_count, D = cfg().d_model, nm = cfg().num_multimask_outputs;
    std::map<std::string, Tensor> out;
    out["masks"] = fx(f, "out.mask_decoder.masks");
    out["iou_pred"] = fx(f, "out.mask_decoder.iou_pred");
    out["object_score_logits"] = fx(f, "out.mask_decoder.object_score_logits");
    out["sam_tokens"] = fx(f, "out.mask_decoder.sam_tokens_out");
    Tensor best(DType::i64, {1, M});
    for (int64_t s = 0; s < M; ++s) {
      int64_t k = 0;
      for (int64_t j = 1; j < nm; ++j)
        if (out["iou_pred"].data<float>()[s * nm + j] > out["iou_pred"].data<float>()[s * nm + k]) k = j;
      best.data<int64_t>()[s] = k;
    }
    out["best_mask_index"] = best;
    Tensor ptr(DType::f32, {1, M, D});
    const Tensor& ptr_data = fx(f, "out.sam_heads.obj_ptr");
    for (int64_t s = 0; s < M; ++s)
      if (a.buckets[0][size_t(s)] >= 0)
        for (int64_t d = 0; d < D; ++d)
          ptr.data<float>()[s * D + d] = ptr_data.data<float>()[a.buckets[0][size_t(s)] * D + d];
    out["obj_ptr"] = ptr;
    PropagationResult r = demux_propagation_outputs(cfg(), a, {out});
    EXPECT_TRUE(r.low_res_multimasks.identical(fx(f, "out.sam_heads.low_res_multimasks"))) << file;
    EXPECT_TRUE(r.ious.identical(fx(f, "out.sam_heads.ious"))) << file;
    EXPECT_TRUE(r.low_res_masks.identical(fx(f, "out.sam_heads.low_res_masks"))) << file;
    EXPECT_TRUE(r.object_score_logits.identical(fx(f, "out.sam_heads.object_score_logits"))) << file;
    EXPECT_TRUE(r.obj_ptr.identical(ptr_data)) << file;
    EXPECT_EQ(r.stored_obj_ptr.shape(), (Shape{1, M, D}));
  }
}

TEST(TrackerIo, MemoryEncoderInputsAreMuxed) {
  TensorFile f = read_safetensors(kFixture + "/modules/memory_encoder_add_prompt_f000.safetensors");
  MultiplexAssignment a = parse_multiplex_state(f.metadata.at("multiplex_state"));  // [[0, 1, 2, -1]]
  const Tensor& masks = fx(f, "in.pred_masks_high_res");
  auto in = assemble_memory_encoder_inputs(cfg(), a, 0, fx(f, "in.maskmem_backbone.pix_feat"), masks,
                                           fx(f, "in.object_score_logits"), {0, 2});
  const int64_t H = masks.dim(2), M = cfg().multiplex_count;
  ASSERT_EQ(in.at("mask_logits").shape(), (Shape{1, M, H, H}));
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t i = 0; i < H * H; i += 97)
      ASSERT_EQ(in.at("mask_logits").data<float>()[s * H * H + i], masks.data<float>()[s * H * H + i]);
  for (int64_t i = 0; i < H * H; ++i) ASSERT_EQ(in.at("mask_logits").data<float>()[3 * H * H + i], 0.0f);
  EXPECT_EQ(in.at("slot_valid").data<float>()[3], 0.0f);
  EXPECT_EQ(in.at("slot_conditioning").data<float>()[0], 1.0f);
  EXPECT_EQ(in.at("slot_conditioning").data<float>()[1], 0.0f);
  EXPECT_EQ(in.at("slot_conditioning").data<float>()[2], 1.0f);
  EXPECT_EQ(in.at("slot_object_score").data<float>()[3], 0.0f);
  EXPECT_EQ(in.at("pix_feat").dtype(), DType::f32);
  EXPECT_THROW(assemble_memory_encoder_inputs(cfg(), a, 0, fx(f, "in.maskmem_backbone.pix_feat"), masks,
                                              fx(f, "in.object_score_logits"), {5}),
               Error);
  EXPECT_THROW(assemble_memory_encoder_inputs(cfg(), a, 1, fx(f, "in.maskmem_backbone.pix_feat"), masks,
                                              fx(f, "in.object_score_logits"), {}),
               Error);
}

// Full buckets of consecutive objects are muxed as views of the objects' masks, other buckets as copies:
// each bucket's mask_logits must hold its slots' objects either way.
TEST(TrackerIo, MemoryEncoderMasksOfFullBucketsAreTheirObjects) {
  const int64_t M = cfg().multiplex_count, D = cfg().d_model, g = cfg().token_grid(), H = 8, N = 3 * M;
  std::vector<int> first(static_cast<size_t>(M)), second(static_cast<size_t>(M)), shuffled(static_cast<size_t>(M));
  for (int s = 0; s < M; ++s) {
    first[size_t(s)] = s;
    second[size_t(s)] = int(M) + s;
    shuffled[size_t(s)] = int(2 * M) + (s + 1) % int(M);
  }
  MultiplexAssignment a{{first, second, shuffled}};
  Tensor masks(DType::f32, {N, 1, H, H}), scores(DType::f32, {N, 1}), pix(DType::f32, {1, D, g, g});
  for (int64_t i = 0; i < masks.numel(); ++i) masks.data<float>()[i] = float(i);
  for (int b = 0; b < 3; ++b) {
    auto in = assemble_memory_encoder_inputs(cfg(), a, b, pix, masks, scores, {});
    const Tensor& mux = in.at("mask_logits");
    ASSERT_EQ(mux.shape(), (Shape{1, M, H, H}));
    for (int64_t s = 0; s < M; ++s)
      for (int64_t i = 0; i < H * H; ++i)
        ASSERT_EQ(mux.data<float>()[s * H * H + i], float(a.buckets[size_t(b)][size_t(s)] * H * H + i))
            << "bucket " << b << " slot " << s;
  }
}

TEST(TrackerIo, BadInputIsAClearError) {
  const int M = cfg().multiplex_count;
  std::vector<int> slots(size_t(M), kSlotEmpty);
  slots[0] = 0;
  slots[1] = 0;
  EXPECT_THROW(one_bucket(slots).validate(M), Error);  // object twice
  slots[1] = 5;
  EXPECT_THROW(one_bucket(slots).validate(M), Error);  // index beyond the object count
  slots[1] = -7;
  EXPECT_THROW(one_bucket(slots).validate(M), Error);  // unknown marker
  EXPECT_THROW(one_bucket({0}).validate(M), Error);    // wrong slot count
  slots[1] = kSlotRemoved;
  EXPECT_NO_THROW(one_bucket(slots).validate(M));
  EXPECT_THROW(one_bucket(slots).find(3), Error);
  EXPECT_THROW(parse_multiplex_state("not json"), Error);
  EXPECT_THROW(parse_multiplex_state("{\"assignments\": [[0, \"x\"]]}"), Error);
  EXPECT_THROW(parse_multiplex_state("{}"), Error);

  MemoryBank bank;
  bank.cond_frames[0] = synthetic_frame(0);
  CurrentFrameFeatures feats;  // missing tensors
  EXPECT_THROW(assemble_propagation_inputs(cfg(), bank, one_bucket(slots), 0, 1, 16, feats), Error);
  TensorFile f = read_safetensors(kFixture + "/modules/propagation_f001.safetensors");
  feats = fixture_features(f);
  EXPECT_THROW(assemble_propagation_inputs(cfg(), bank, one_bucket(slots), 1, 1, 16, feats), Error);  // bucket
  bank.cond_frames[0].obj_ptr = Tensor(DType::f32, {1, 2, 3});
  EXPECT_THROW(assemble_propagation_inputs(cfg(), bank, one_bucket(slots), 0, 1, 16, feats), Error);
  EXPECT_THROW(demux_propagation_outputs(cfg(), one_bucket(slots), {}), Error);
  EXPECT_THROW(stack_buckets({}), Error);
}

// Two buckets: objects come back in object-index order from whichever bucket/slot holds them.
TEST(TrackerIo, DemuxAcrossBuckets) {
  const int64_t M = cfg().multiplex_count, D = cfg().d_model, nm = cfg().num_multimask_outputs;
  const int64_t hw = cfg().low_res_mask_size();
  ASSERT_GE(M, 3);
  MultiplexAssignment a;
  a.buckets.assign(2, std::vector<int>(size_t(M), kSlotEmpty));
  a.buckets[0][0] = 2;
  a.buckets[0][1] = kSlotRemoved;
  a.buckets[0][2] = 0;
  a.buckets[1][1] = 1;
  std::vector<std::map<std::string, Tensor>> outs(2);
  for (int b = 0; b < 2; ++b) {
    auto& o = outs[size_t(b)];
    o["masks"] = Tensor(DType::f32, {1, M, nm, hw, hw});
    o["iou_pred"] = Tensor(DType::f32, {1, M, nm});
    o["object_score_logits"] = Tensor(DType::f32, {1, M, 1});
    o["obj_ptr"] = Tensor(DType::f32, {1, M, D});
    o["sam_tokens"] = Tensor(DType::f32, {1, M, nm, D});
    o["best_mask_index"] = Tensor(DType::i64, {1, M});
    for (int64_t s = 0; s < M; ++s) {
      const float tag = float(100 * b + s);  // identifies (bucket, slot)
      o["object_score_logits"].data<float>()[s] = s == 2 ? -1.0f : tag + 1.0f;
      o["best_mask_index"].data<int64_t>()[s] = s % nm;
      for (int64_t k = 0; k < nm; ++k) {
        o["iou_pred"].data<float>()[s * nm + k] = tag + 0.1f * float(k);
        for (int64_t i = 0; i < hw * hw; ++i) o["masks"].data<float>()[(s * nm + k) * hw * hw + i] = tag + float(k);
      }
      for (int64_t d = 0; d < D; ++d) o["obj_ptr"].data<float>()[s * D + d] = tag;
    }
  }
  PropagationResult r = demux_propagation_outputs(cfg(), a, outs);
  ASSERT_EQ(r.obj_ptr.shape(), (Shape{3, D}));
  EXPECT_EQ(r.obj_ptr.data<float>()[0 * D], 2.0f);    // object 0: bucket 0 slot 2
  EXPECT_EQ(r.obj_ptr.data<float>()[1 * D], 101.0f);  // object 1: bucket 1 slot 1
  EXPECT_EQ(r.obj_ptr.data<float>()[2 * D], 0.0f);    // object 2: bucket 0 slot 0
  EXPECT_EQ(r.object_score_logits.data<float>()[1], 102.0f);
  // Object 0 sits in slot 2 whose logit is -1: every mask is -1024.
  EXPECT_EQ(r.low_res_multimasks.data<float>()[0], -1024.0f);
  EXPECT_EQ(r.low_res_masks.data<float>()[0], -1024.0f);
  // Object 1: best index 1 % nm -> mask value tag + 1.
  EXPECT_EQ(r.low_res_masks.data<float>()[1 * hw * hw], 101.0f + float(1 % nm));
  EXPECT_EQ(r.ious.data<float>()[1 * nm + 1], 101.1f);
  EXPECT_EQ(r.stored_obj_ptr.shape(), (Shape{2, M, D}));
  EXPECT_EQ(r.stored_obj_ptr.data<float>()[(1 * M + 1) * D], 101.0f);
}

// Every propagation call of the fixture video (video/raw_frame_*: the official per-bucket decoder outputs,
// masks stored as f16, and the data-space step outputs): demux with the assignment in effect (the
// previous frame's tracker states) gives the official data-space tensors.
TEST(TrackerIo, DemuxMatchesEveryPropagationCallOfTheVideo) {
  std::ifstream tf(kFixture + "/video/trace.json");
  ASSERT_TRUE(tf.good());
  nlohmann::json trace = nlohmann::json::parse(tf);
  const int64_t M = cfg().multiplex_count, nm = cfg().num_multimask_outputs;
  nlohmann::json prev_states;
  int calls_checked = 0;
  for (auto& fr : trace["frames"]) {
    const std::string raw = fr["raw_file"].get<std::string>();
    TensorFile f = read_safetensors(kFixture + "/video/" + raw.substr(raw.rfind('/') + 1));
    int call = 0;
    const auto& steps = fr["tracker_steps"];
    for (size_t j = 0; j < steps.size(); ++j) {
      if (steps[j]["kind"] != "propagation") continue;
      const std::string c = "tracker_call" + std::to_string(call) + ".mux.";
      const std::string s = "tracker_step" + std::to_string(j) + ".propagation.";
      ASSERT_TRUE(f.has(c + "iou_pred")) << raw << " " << c;
      MultiplexAssignment a;
      for (auto& bucket : prev_states[size_t(call)]["assignments"]) a.buckets.push_back(bucket.get<std::vector<int>>());
      std::map<std::string, Tensor> out;
      out["masks"] = f.at(c + "masks").cast(DType::f32);
      out["iou_pred"] = f.at(c + "iou_pred");
      out["object_score_logits"] = f.at(c + "object_score_logits");
      out["sam_tokens"] = f.at(c + "sam_tokens_out");
      out["obj_ptr"] = Tensor(DType::f32, {1, M, cfg().d_model});
      Tensor best(DType::i64, {1, M});
      for (int64_t sl = 0; sl < M; ++sl) {
        const float* iou = out["iou_pred"].data<float>() + sl * nm;
        int64_t k = 0;
        for (int64_t q = 1; q < nm; ++q)
          if (iou[q] > iou[k]) k = q;
        best.data<int64_t>()[sl] = k;
      }
      out["best_mask_index"] = best;
      PropagationResult r = demux_propagation_outputs(cfg(), a, {out});
      EXPECT_TRUE(r.ious.identical(f.at(s + "ious"))) << raw << " call " << call;
      EXPECT_TRUE(r.object_score_logits.identical(f.at(s + "object_score_logits"))) << raw << " call " << call;
      const Tensor& ref = f.at(s + "low_res_masks");
      ASSERT_EQ(r.low_res_masks.shape(), ref.shape()) << raw;
      double worst = 0;
      for (int64_t i = 0; i < ref.numel(); ++i) {
        const double g = r.low_res_masks.data<float>()[i], e = ref.data<float>()[i];
        worst = std::max(worst, std::fabs(g - e) / (std::fabs(e) * 1e-3 + 1e-3));  // f16 storage of mux masks
      }
      EXPECT_LE(worst, 1.0) << raw << " call " << call;
      ++call, ++calls_checked;
    }
    prev_states = fr["tracker_states"];
  }
  EXPECT_EQ(calls_checked, 21);  // frames 1..9: one state; frames 10..15: two states
}
