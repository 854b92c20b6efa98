#include "verify/video_parity.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "deploy/model_store/model_store.h"
#include "io/files.h"
#include "io/json_limits.h"
#include "pipeline/masks/rle.h"
#include "pipeline/media/video_io.h"
#include "pipeline/predictor/control_config.h"
#include "pipeline/predictor/session_api.h"
#include "verify/call_trace_backend.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::verify {

using namespace segmux::pipeline;

namespace fs = std::filesystem;

namespace {

struct RefFrame {
  int frame_index = 0;
  std::vector<int64_t> ids;
  std::vector<double> probs;
  std::vector<std::array<double, 4>> boxes;
  std::vector<RleMask> masks;
};

RefFrame parse_ref(const nlohmann::json& j, int frame_index) {
  RefFrame r;
  r.frame_index = frame_index;
  r.ids = j.at("obj_ids").get<std::vector<int64_t>>();
  r.probs = j.at("probs").get<std::vector<double>>();
  for (auto& b : j.at("boxes_xywh")) r.boxes.push_back(b.get<std::array<double, 4>>());
  for (auto& m : j.at("masks_rle")) {
    RleMask rle;
    rle.height = m.at("size")[0];
    rle.width = m.at("size")[1];
    rle.counts = m.at("counts").get<std::vector<int64_t>>();
    r.masks.push_back(std::move(rle));
  }
  SEGMUX_CHECK(r.probs.size() == r.ids.size() && r.boxes.size() == r.ids.size() && r.masks.size() == r.ids.size(),
               "trace.json frame ", frame_index, ": inconsistent object lists");
  return r;
}

std::string ids_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

void compare_frame(const std::string& label, const RefFrame& ref, const FrameOutput& got, VideoParityReport& rep,
                   std::ostream& log) {
  ++rep.frames_compared;
  if (got.obj_ids != ref.ids) {
    ++rep.id_mismatches;
    log << label << ": ids " << ids_str(got.obj_ids) << ", official " << ids_str(ref.ids) << "  MISS\n";
  }
  std::ostringstream line;
  line << label << ": ids " << ids_str(got.obj_ids);
  for (size_t k = 0; k < ref.ids.size(); ++k) {
    auto it = std::find(got.obj_ids.begin(), got.obj_ids.end(), ref.ids[k]);
    if (it == got.obj_ids.end()) continue;
    const size_t j = size_t(it - got.obj_ids.begin());
    ++rep.objects_compared;
    BinaryMask want = rle_decode(ref.masks[k]);
    const BinaryMask& have = got.masks[j];
    SEGMUX_CHECK(have.height == want.height && have.width == want.width, label, ": mask size ", have.width, "x",
                 have.height, " vs official ", want.width, "x", want.height);
    long long diff = 0;
    const bool mask_ok = mask_within_parity_bar(want, have, &diff);
    const double iou = mask_iou(have, want);
    if (!mask_ok) ++rep.mask_misses;
    if (iou < rep.worst_iou) {
      rep.worst_iou = iou;
      rep.worst_frame = ref.frame_index;
      rep.worst_obj = ref.ids[k];
      rep.worst_diff_pixels = diff;
    }
    const bool prob_ok = std::abs(double(got.probs[j]) - ref.probs[k]) <= 1e-3;
    if (!prob_ok) ++rep.prob_mismatches;
    double box_px = 0;
    for (int c = 0; c < 4; ++c) {
      const double px = (c % 2 == 0) ? want.width : want.height;
      box_px = std::max(box_px, std::abs(double(got.boxes_xywh[j][size_t(c)]) - ref.boxes[k][size_t(c)]) * px);
    }
    rep.worst_box_px = std::max(rep.worst_box_px, box_px);
    line << "  id " << ref.ids[k] << ": IoU " << std::fixed << std::setprecision(4) << iou << " (" << diff
         << " px differ of " << want.area() << ")" << (mask_ok ? "" : " MASK MISS") << (prob_ok ? "" : " PROB MISS")
         << (box_px > 1.0 + 1e-6 ? " box off by " + std::to_string(box_px) + " px" : "");
  }
  log << line.str() << "\n";
}

}  // namespace

bool mask_within_parity_bar(const BinaryMask& reference, const BinaryMask& got, long long* diff_pixels) {
  SEGMUX_CHECK(reference.height == got.height && reference.width == got.width, "mask sizes differ: ", got.width, "x",
               got.height, " vs ", reference.width, "x", reference.height);
  long long diff = 0;
  for (size_t p = 0; p < reference.pixels.size(); ++p) diff += (reference.pixels[p] != 0) != (got.pixels[p] != 0);
  if (diff_pixels) *diff_pixels = diff;
  return mask_iou(got, reference) >= 0.99 || (reference.area() < 1600 && diff <= 16);
}

namespace {

// The model of a fixture folder (its weights, config and vocabulary) or the given model folder.
ModelSource fixture_model_source(const VideoParityOptions& opt) {
  const std::string& dir = opt.fixture_dir;
  ModelSource src;
  src.model_dir = opt.model_dir;
  if (opt.model_dir.empty()) {
    src.weights = opt.weights.empty() ? dir + "/weights.safetensors" : opt.weights;
    src.config = dir + "/config.json";
    src.read_config = load_fixture_config;
    src.vocab = dir + "/tokenizer/bpe_simple_vocab_16e6.txt.gz";
  }
  src.cache_dir = opt.cache_dir.empty() ? (fs::temp_directory_path() / "segmux-parity-cache").string() : opt.cache_dir;
  src.num_threads = opt.num_threads;
  src.engine = opt.engine;
  src.precision = opt.precision;
  return src;
}

}  // namespace

VideoParityReport run_video_parity(const VideoParityOptions& opt, std::ostream& log) {
  const std::string dir = opt.fixture_dir;
  const std::string trace_path = dir + "/video/trace.json";
  SEGMUX_CHECK(std::filesystem::exists(trace_path), "'", trace_path, "' does not exist (is '", dir,
               "' a fixture folder?)");
  nlohmann::json trace = read_untrusted_json_file(trace_path);
  SEGMUX_CHECK(trace.is_object() && trace.contains("outputs") && trace.contains("prompt"), "'", trace_path,
               "' is not a predictor trace");
  const std::string prompt = trace["prompt"].get<std::string>();

  const ModelSource src = fixture_model_source(opt);
  auto frames = open_video(dir + "/video/frames");
  OpenedModel model = open_model(src, [&](const std::string& s) { log << s << "\n"; });

  // Control-plane settings: the fixture's config over the official defaults.
  ControlConfig ccfg = load_fixture_control_config(dir + "/config.json");
  std::ostringstream calls;
  std::unique_ptr<Model> traced;
  if (!opt.trace_calls.empty()) traced = std::make_unique<verify::CallTraceModel>(*model.model, calls);
  SessionOptions sopt;
  sopt.keep_outputs = false;  // one propagation: nothing to fetch later
  VideoSession session(traced ? *traced : *model.model, *frames, ccfg, sopt);
  VideoParityReport rep;
  const int start = trace["add_prompt"].value("frame_index", 0);
  auto t0 = std::chrono::steady_clock::now();
  FrameOutput first = session.add_prompt(start, Prompt::from_text(prompt));
  compare_frame("add_prompt frame " + std::to_string(start), parse_ref(trace["add_prompt"]["outputs"], start), first,
                rep, log);
  std::map<int, RefFrame> refs;
  for (auto& f : trace["outputs"]) refs[f["frame_index"].get<int>()] = parse_ref(f, f["frame_index"].get<int>());
  int yielded = 0;
  PropagateRequest req;
  req.direction = PropagationDirection::Forward;
  req.start_frame_index = start;
  session.propagate(req, [&](const FrameOutput& out) {
    ++yielded;
    if (traced)
      calls << nlohmann::json{{"call", "yield"}, {"frame", out.frame_index}, {"obj_ids", out.obj_ids}}.dump() << "\n";
    auto it = refs.find(out.frame_index);
    if (it == refs.end()) {
      ++rep.id_mismatches;
      log << "frame " << out.frame_index << ": emitted, but the official predictor emitted no such frame  MISS\n";
    } else {
      compare_frame("frame " + std::to_string(out.frame_index), it->second, out, rep, log);
      refs.erase(it);
    }
    return true;
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.seconds_per_frame = secs / std::max(1, yielded + 1);
  for (auto& [f, r] : refs) {
    ++rep.id_mismatches;
    log << "frame " << f << ": the official predictor emitted it, we did not  MISS\n";
  }
  if (traced) {
    AtomicFile f(opt.trace_calls);
    f.write(calls.str());
    f.commit();
    log << "tracker calls written to " << opt.trace_calls << "\n";
  }
  log << "video parity (engine " << opt.engine << (opt.precision == "fp32" ? "" : ", " + opt.precision)
      << "): " << rep.frames_compared << " frames, " << rep.objects_compared << " object-frames; id "
      << "mismatches " << rep.id_mismatches << ", prob " << rep.prob_mismatches << ", mask " << rep.mask_misses
      << "; worst IoU " << std::setprecision(4) << rep.worst_iou << " (frame " << rep.worst_frame << ", object "
      << rep.worst_obj << ", " << rep.worst_diff_pixels << " px differ); worst box deviation " << rep.worst_box_px
      << " px; " << std::setprecision(3) << rep.seconds_per_frame << " s/frame -> " << (rep.passed() ? "PASS" : "FAIL")
      << "\n";
  return rep;
}

RequestReplayReport run_request_replay(const VideoParityOptions& opt, std::ostream& log) {
  const std::string dir = opt.fixture_dir;
  const std::string trace_path = dir + "/video/trace.json";
  nlohmann::json trace = read_untrusted_json_file(trace_path);
  SEGMUX_CHECK(trace.is_object() && trace.contains("requests") && trace["requests"].is_array(), "'", trace_path,
               "' has no request list ('requests')");
  const ModelSource src = fixture_model_source(opt);
  OpenedModel model = open_model(src, [&](const std::string& s) { log << s << "\n"; });
  std::ostringstream calls;
  std::unique_ptr<Model> traced;
  if (!opt.trace_calls.empty()) traced = std::make_unique<verify::CallTraceModel>(*model.model, calls);
  auto frames = open_video(dir + "/video/frames");
  // Outputs kept (the default): remove_object answers with the frame's kept outputs.
  VideoSession session(traced ? *traced : *model.model, *frames, load_fixture_control_config(dir + "/config.json"));
  RequestReplayReport rep;
  int index = 0;
  for (const auto& r : trace["requests"]) {
    const std::string type = r.at("type").get<std::string>();
    const std::string label = "request " + std::to_string(index) + " (" + type + ")";
    if (traced) calls << nlohmann::json{{"call", "request"}, {"index", index}, {"type", type}}.dump() << "\n";
    VideoParityReport one;
    std::ostringstream lines;
    if (type == "add_prompt") {
      Prompt p;
      if (r.contains("text")) p.text = r["text"].get<std::string>();
      if (r.contains("obj_id")) p.obj_id = r["obj_id"].get<int64_t>();
      if (r.contains("points"))
        for (const auto& q : r["points"]) p.points_xy.push_back({q[0].get<float>(), q[1].get<float>()});
      if (r.contains("point_labels")) p.point_labels = r["point_labels"].get<std::vector<int>>();
      if (r.contains("bounding_boxes"))
        for (const auto& b : r["bounding_boxes"])
          p.boxes_xywh.push_back({b[0].get<float>(), b[1].get<float>(), b[2].get<float>(), b[3].get<float>()});
      if (r.contains("bounding_box_labels")) p.box_labels = r["bounding_box_labels"].get<std::vector<int>>();
      if (r.contains("object_mask")) {  // the segmux extension (service/mask_request.h), as the fixtures write it
        const auto& m = r["object_mask"];
        p.mask = rle_decode(
            RleMask{m["size"][0].get<int>(), m["size"][1].get<int>(), m["counts"].get<std::vector<int64_t>>()});
      }
      p.clear_old_points = r.value("clear_old_points", true);
      const int f = r.at("frame_index").get<int>();
      compare_frame(label + " frame " + std::to_string(f), parse_ref(r.at("outputs"), f), session.add_prompt(f, p), one,
                    lines);
    } else if (type == "remove_object") {
      const int f = r.value("frame_index", 0);  // the official default
      session.remove_object(r.at("obj_id").get<int64_t>(), f);
      FrameOutput got = session.frame_outputs(f).value_or(FrameOutput{});
      compare_frame(label + " frame " + std::to_string(f), parse_ref(r.at("outputs"), f), got, one, lines);
    } else if (type == "propagate_in_video") {
      std::map<int, RefFrame> refs;
      for (const auto& y : r.at("yields"))
        refs[y["frame_index"].get<int>()] = parse_ref(y, y["frame_index"].get<int>());
      PropagateRequest req;
      const std::string d = r.value("propagation_direction", "both");
      req.direction = d == "forward"    ? PropagationDirection::Forward
                      : d == "backward" ? PropagationDirection::Backward
                                        : PropagationDirection::Both;
      // The official request's range, as `track --requests` runs it (null: not given).
      if (r.contains("start_frame_index") && !r["start_frame_index"].is_null())
        req.start_frame_index = r["start_frame_index"].get<int>();
      if (r.contains("max_frame_num_to_track") && !r["max_frame_num_to_track"].is_null())
        req.max_frame_num_to_track = r["max_frame_num_to_track"].get<int>();
      session.propagate(req, [&](const FrameOutput& out) {
        if (traced)
          calls << nlohmann::json{{"call", "yield"}, {"frame", out.frame_index}, {"obj_ids", out.obj_ids}}.dump()
                << "\n";
        auto it = refs.find(out.frame_index);
        if (it == refs.end()) {
          ++one.id_mismatches;
          lines << label << " frame " << out.frame_index << ": not emitted officially  MISS\n";
        } else {
          compare_frame(label + " frame " + std::to_string(out.frame_index), it->second, out, one, lines);
          refs.erase(it);
        }
        return true;
      });
      for (auto& [f, ref] : refs) {
        ++one.id_mismatches;
        lines << label << " frame " << f << ": emitted officially, not by us  MISS\n";
      }
    } else if (type == "reset_session") {
      session.reset();
    } else {
      fail("'", trace_path, "' request ", index, ": unknown type '", type, "'");
    }
    log << lines.str();
    const bool ok = type == "reset_session" || one.passed();
    log << label << ": " << (ok ? "match" : "DIFFERS") << " (" << one.frames_compared << " frames, id "
        << one.id_mismatches << ", prob " << one.prob_mismatches << ", mask " << one.mask_misses << ")\n";
    rep.requests.push_back({type, ok, one});
    ++index;
  }
  if (traced) {
    AtomicFile f(opt.trace_calls);
    f.write(calls.str());
    f.commit();
    log << "tracker calls written to " << opt.trace_calls << "\n";
  }
  return rep;
}

}  // namespace segmux::verify
