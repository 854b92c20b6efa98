// Replays the raw model outputs recorded from the official SAM 3.1 code (fixtures sam31-tiny/video)
// through the C++ control plane alone and checks every decision and output against trace.json.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/safetensors.h"
#include "pipeline/predictor/control_plane.h"
#include "verify/replay_backend.h"
#include "verify/sam31/fixture_config.h"

using namespace segmux;
using namespace segmux::pipeline;
using nlohmann::json;

namespace {
const std::string kFixture = std::string(SEGMUX_FIXTURES) + "/sam31-tiny";

json load_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

RleMask rle_from_json(const json& j) {
  RleMask r;
  r.height = j.at("size")[0].get<int>();
  r.width = j.at("size")[1].get<int>();
  r.counts = j.at("counts").get<std::vector<int64_t>>();
  return r;
}

template <typename T>
std::vector<T> tensor_values(const Tensor& t) {
  std::vector<T> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(T(t.get_as_double(i)));
  return v;
}

struct Agreement {
  int frames = 0, objects = 0;
  double min_iou = 1.0, max_box_px = 0.0, max_prob_diff = 0.0;
};

// Compares one output dict of trace.json with ours.
void expect_output(const json& ref, const FrameOutput& out, int W, int H, Agreement& agg, const std::string& where) {
  auto ids = ref.at("obj_ids").get<std::vector<int64_t>>();
  ASSERT_EQ(out.obj_ids, ids) << where;
  auto probs = ref.at("probs").get<std::vector<double>>();
  auto boxes = ref.at("boxes_xywh");
  auto rles = ref.at("masks_rle");
  ++agg.frames;
  for (size_t i = 0; i < ids.size(); ++i) {
    ++agg.objects;
    double dp = std::abs(double(out.probs[i]) - probs[i]);
    agg.max_prob_diff = std::max(agg.max_prob_diff, dp);
    EXPECT_LE(dp, 1e-6 * std::max(1.0, std::abs(probs[i]))) << where << " obj " << ids[i];
    for (int k = 0; k < 4; ++k) {
      double scale = (k % 2 == 0) ? W : H;
      double d = std::abs(double(out.boxes_xywh[i][size_t(k)]) - boxes[i][size_t(k)].get<double>()) * scale;
      agg.max_box_px = std::max(agg.max_box_px, d);
      EXPECT_LE(d, 1.0) << where << " obj " << ids[i] << " box coord " << k;
    }
    BinaryMask ref_mask = rle_decode(rle_from_json(rles[i]));
    double iou = mask_iou(ref_mask, out.masks[i]);
    agg.min_iou = std::min(agg.min_iou, iou);
    EXPECT_GE(iou, 0.999) << where << " obj " << ids[i];
  }
}

std::vector<int64_t> ints(const json& j) { return j.get<std::vector<int64_t>>(); }
}  // namespace

TEST(Replay, OfficialTraceDecisionsAndOutputs) {
  std::ifstream probe(kFixture + "/video/trace.json");
  if (!probe.good()) GTEST_SKIP() << "fixtures not found at " << kFixture;
  json trace = load_json(kFixture + "/video/trace.json");
  ControlConfig cfg = segmux::verify::load_fixture_control_config(kFixture + "/video/trace.json");
  verify::ReplaySession replay = verify::ReplaySession::from_fixture(kFixture);
  const auto& first = trace["add_prompt"]["outputs"]["masks_rle"][0]["size"];
  const int H = first[0].get<int>(), W = first[1].get<int>();
  auto frames = make_blank_frame_source(int(trace["outputs"].size()), W, H);
  VideoControlPlane cp(replay, *frames, cfg);

  Agreement agg;
  FrameOutput prompt_out = cp.add_text_prompt(trace["add_prompt"]["frame_index"].get<int>(), trace["prompt"]);
  EXPECT_EQ(replay.text_batch(), (std::vector<std::string>{"shape", "visual", "geometric"}));
  expect_output(trace["add_prompt"]["outputs"], prompt_out, W, H, agg, "add_prompt");

  std::vector<FrameOutput> outputs;
  std::vector<int> hotstart_checked;
  size_t checked_before = 0;
  // Check each processed frame's decisions and hot-start metadata right after it was processed.
  auto check_new_decisions = [&]() {
    const auto& ds = cp.decisions();
    for (size_t k = checked_before; k < ds.size(); ++k) {
      const FrameDecisions& d = ds[k];
      const json& ref = trace["frames"][k];
      std::string where = ref["phase"].get<std::string>() + " frame " + std::to_string(d.frame_index);
      ASSERT_EQ(d.phase, ref["phase"].get<std::string>()) << where;
      ASSERT_EQ(d.frame_index, ref["frame_index"].get<int>()) << where;
      EXPECT_EQ(d.tracker_obj_ids_before, ints(ref["tracker_obj_ids_before"])) << where;
      EXPECT_EQ(std::vector<int64_t>(d.det_kept_queries.begin(), d.det_kept_queries.end()),
                ints(ref["det_kept_queries"]))
          << where;
      EXPECT_EQ(std::vector<int64_t>(d.det_order.begin(), d.det_order.end()), ints(ref["det_order"])) << where;
      const json& u = ref["update_plan"];
      EXPECT_EQ(std::vector<int64_t>(d.new_det_fa_inds.begin(), d.new_det_fa_inds.end()), ints(u["new_det_fa_inds"]))
          << where;
      EXPECT_EQ(d.new_det_obj_ids, ints(u["new_det_obj_ids"])) << where;
      EXPECT_EQ(d.unmatched_trk_obj_ids, ints(u["unmatched_trk_obj_ids"])) << where;
      std::map<int, std::vector<int64_t>> matched;
      for (auto it = u["det_to_matched_trk_obj_ids"].begin(); it != u["det_to_matched_trk_obj_ids"].end(); ++it)
        matched[std::stoi(it.key())] = ints(it.value());
      EXPECT_EQ(d.det_to_matched_trk_obj_ids, matched) << where;
      auto removed = ints(u["obj_ids_newly_removed"]);
      std::sort(removed.begin(), removed.end());
      EXPECT_EQ(d.obj_ids_newly_removed, removed) << where;
      EXPECT_EQ(d.num_obj_dropped_due_to_limit, u["num_obj_dropped_due_to_limit"].get<int>()) << where;
      std::map<int64_t, int> hc;
      for (auto it = u["trk_id_to_max_iou_high_conf_det"].begin(); it != u["trk_id_to_max_iou_high_conf_det"].end();
           ++it)
        hc[std::stoll(it.key())] = it.value().get<int>();
      EXPECT_EQ(d.trk_id_to_max_iou_high_conf_det, hc) << where;
      auto rec = ints(u["reconditioned_obj_ids"]);
      std::sort(rec.begin(), rec.end());
      EXPECT_EQ(d.reconditioned_obj_ids, rec) << where;
      EXPECT_EQ(d.obj_ids_after, ints(ref["obj_ids_after"])) << where;
      std::map<int64_t, double> scores;
      for (auto it = ref["obj_id_to_score"].begin(); it != ref["obj_id_to_score"].end(); ++it)
        scores[std::stoll(it.key())] = it.value().get<double>();
      ASSERT_EQ(d.obj_id_to_score.size(), scores.size()) << where;
      for (auto& [id, s] : scores) EXPECT_NEAR(d.obj_id_to_score.at(id), s, 1e-6 * std::max(1.0, std::abs(s))) << where;
      EXPECT_EQ(std::vector<int64_t>(d.masklet_confirmation_status.begin(), d.masklet_confirmation_status.end()),
                ints(ref["masklet_confirmation_status"]))
          << where;
      EXPECT_EQ(d.stats.num_obj_tracked, ref["frame_stats"]["num_obj_tracked"].get<int>()) << where;
      EXPECT_EQ(d.stats.num_obj_dropped, ref["frame_stats"]["num_obj_dropped"].get<int>()) << where;
      EXPECT_EQ(d.max_obj_id, ref["max_obj_id"].get<int64_t>()) << where;
      ASSERT_EQ(d.tracker_states.size(), ref["tracker_states"].size()) << where;
      for (size_t s = 0; s < d.tracker_states.size(); ++s) {
        EXPECT_EQ(d.tracker_states[s].obj_ids, ints(ref["tracker_states"][s]["obj_ids"])) << where;
        EXPECT_EQ(d.tracker_states[s].assignments,
                  ref["tracker_states"][s]["assignments"].get<std::vector<std::vector<int>>>())
            << where;
      }
      EXPECT_EQ(d.build_outputs_obj_ids, ints(ref["build_outputs_obj_ids"])) << where;
      for (auto it = ref["build_outputs_masks_rle"].begin(); it != ref["build_outputs_masks_rle"].end(); ++it) {
        int64_t id = std::stoll(it.key());
        ASSERT_TRUE(d.build_outputs_masks.count(id)) << where << " obj " << id;
        double iou = mask_iou(rle_decode(rle_from_json(it.value())), rle_decode(d.build_outputs_masks.at(id)));
        agg.min_iou = std::min(agg.min_iou, iou);
        EXPECT_GE(iou, 0.999) << where << " build_outputs obj " << id;
      }
      // Hot-start and confirmation metadata after the frame = the official gpu/rank0 metadata.
      TensorFile raw = read_safetensors(kFixture + "/video/" + ref["raw_file"].get<std::string>());
      for (const auto& [key, target] : raw.metadata)
        if (key.rfind("alias:", 0) == 0) raw.tensors[key.substr(6)] = raw.at(target);
      const HotstartMetadata& m = d.metadata_after;
      EXPECT_EQ(m.obj_first_frame, tensor_values<int64_t>(raw.at("hotstart.obj_first_frame"))) << where;
      EXPECT_EQ(m.last_occluded, tensor_values<int64_t>(raw.at("hotstart.last_occluded_tensor"))) << where;
      EXPECT_EQ(m.overlap_pair_counts, tensor_values<int64_t>(raw.at("hotstart.overlap_pair_counts"))) << where;
      if (raw.has("hotstart.consecutive_unmatch_count")) {
        EXPECT_EQ(m.consecutive_unmatch_count, tensor_values<int64_t>(raw.at("hotstart.consecutive_unmatch_count")))
            << where;
      }
      if (raw.has("hotstart.trk_keep_alive")) {
        EXPECT_EQ(m.trk_keep_alive, tensor_values<int64_t>(raw.at("hotstart.trk_keep_alive"))) << where;
      }
      if (raw.has("masklet_confirmation_consecutive_det_num")) {
        EXPECT_EQ(m.consecutive_det_num, tensor_values<int64_t>(raw.at("masklet_confirmation_consecutive_det_num")))
            << where;
      }
      // Post-NMS detection scores and keep flags.
      auto det_keep = tensor_values<int>(raw.at("det_keep"));
      std::vector<int> kept_flags(det_keep.size(), 0);
      for (int q : d.det_kept_queries) kept_flags[size_t(q)] = 1;
      EXPECT_EQ(kept_flags, det_keep) << where;
      // Masks fed to memory encoding (after occlusion suppression).
      if (raw.has("mem_update_low_res_mask_logits")) {
        MaskStack ref_mem = MaskStack::from_tensor(raw.at("mem_update_low_res_mask_logits"), "mem update");
        ASSERT_EQ(ref_mem.count, d.memory_update_low_res_masks.count) << where;
        for (size_t p = 0; p < ref_mem.values.size(); ++p)
          ASSERT_EQ(ref_mem.values[p] > 0.f, d.memory_update_low_res_masks.values[p] > 0.f) << where << " px " << p;
      }
      hotstart_checked.push_back(d.frame_index);
    }
    checked_before = ds.size();
  };
  check_new_decisions();
  cp.propagate(-1, -1, false, [&](FrameOutput o) {
    outputs.push_back(std::move(o));
    return true;
  });
  check_new_decisions();
  EXPECT_EQ(replay.records_consumed(), int(trace["frames"].size()));

  // Tracker calls per processed frame: one propagation per state and the memory encodings with their
  // conditioning objects, in the official order (tracker_steps of trace.json).
  std::vector<std::vector<std::string>> calls_per_frame;
  for (const std::string& line : replay.call_log()) {
    if (line.rfind("detect ", 0) == 0) calls_per_frame.emplace_back();
    if (calls_per_frame.empty()) continue;
    if (line.rfind("propagate ", 0) == 0) calls_per_frame.back().push_back("propagation");
    auto enc = line.find("cond=[");
    if (enc != std::string::npos) calls_per_frame.back().push_back("encode " + line.substr(enc + 5));
  }
  ASSERT_EQ(calls_per_frame.size(), trace["frames"].size());
  for (size_t k = 0; k < calls_per_frame.size(); ++k) {
    std::vector<std::string> expected;
    for (const auto& step : trace["frames"][k]["tracker_steps"]) {
      std::string kind = step["kind"].get<std::string>();
      if (kind == "propagation") expected.push_back("propagation");
      if (kind == "encode_new_memory") {
        std::string c = "[";
        for (size_t i = 0; i < step["conditioning_objects"].size(); ++i)
          c += (i ? "," : "") + std::to_string(step["conditioning_objects"][i].get<int>());
        expected.push_back("encode " + c + "]");
      }
    }
    EXPECT_EQ(calls_per_frame[k], expected) << "tracker calls of processed frame #" << k;
  }

  auto yield_order = trace["propagate_yield_order"].get<std::vector<int>>();
  ASSERT_EQ(outputs.size(), yield_order.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    ASSERT_EQ(outputs[k].frame_index, yield_order[k]);
    const json& ref = trace["outputs"][k];
    ASSERT_EQ(ref["frame_index"].get<int>(), outputs[k].frame_index);
    expect_output(ref, outputs[k], W, H, agg, "output frame " + std::to_string(outputs[k].frame_index));
    EXPECT_EQ(outputs[k].stats.num_obj_tracked, ref["frame_stats"]["num_obj_tracked"].get<int>());
  }
  std::cout << "[replay] frames checked: " << cp.decisions().size() << " processed, " << agg.frames << " outputs, "
            << agg.objects << " object outputs; min mask IoU " << agg.min_iou << ", max box error " << agg.max_box_px
            << " px, max prob diff " << agg.max_prob_diff << "\n";
}

// The replay is sensitive to the control plane's decisions: with a different hot-start threshold
// object 1 is not removed on frame 8, and the recorded tracker outputs of frame 9 (which no longer
// hold object 1) expose the divergence.
TEST(Replay, DivergingDecisionsAreDetected) {
  std::ifstream probe(kFixture + "/video/trace.json");
  if (!probe.good()) GTEST_SKIP() << "fixtures not found at " << kFixture;
  ControlConfig cfg = segmux::verify::load_fixture_control_config(kFixture + "/video/trace.json");
  cfg.hotstart_unmatch_thresh = 9;
  verify::ReplaySession replay = verify::ReplaySession::from_fixture(kFixture);
  auto frames = make_blank_frame_source(16, 320, 240);
  VideoControlPlane cp(replay, *frames, cfg);
  cp.add_text_prompt(0, "shape");
  try {
    cp.propagate(-1, -1, false, [](FrameOutput) { return true; });
    FAIL() << "the replay did not notice the diverging decision";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("object 1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(cp.decisions()[9].obj_ids_newly_removed.empty());  // propagate frame 8
}
