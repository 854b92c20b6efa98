#include "pipeline/outputs/eval_exports.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "io/files.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/outputs/eval_inputs.h"
#include "pipeline/outputs/tracks_json.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

// tracks.json read back into what the exports need.
struct TrackObject {
  int64_t id = 0;
  std::string prompt;
  double score = 0;
  std::array<double, 4> box{};  // normalised xywh
  int64_t area = 0;
  RleMask rle;
};
struct TrackFrame {
  int index = 0;
  std::optional<double> time_s;
  std::vector<TrackObject> objects;
};
struct Tracks {
  int width = 0, height = 0;
  std::vector<std::string> prompts;
  std::vector<TrackFrame> frames;  // ascending frame index
  int category(const std::string& prompt) const {
    const auto at = std::find(prompts.begin(), prompts.end(), prompt);
    return at == prompts.end() ? 1 : int(at - prompts.begin()) + 1;
  }
};

Tracks read_tracks(const nlohmann::json& t) {
  Tracks r;
  SEGMUX_CHECK(t.is_object() && t.value("width", 0) > 0 && t.value("height", 0) > 0 && t.contains("frames") &&
                   t["frames"].is_array(),
               "tracks.json: not a segmux tracks document (width, height, frames)");
  r.width = t["width"].get<int>();
  r.height = t["height"].get<int>();
  if (t.contains("prompts") && t["prompts"].is_array())
    r.prompts = t["prompts"].get<std::vector<std::string>>();
  else
    r.prompts = {t.value("prompt", std::string())};
  for (const auto& f : t["frames"]) {
    TrackFrame fr;
    fr.index = f.at("frame_index").get<int>();
    if (f.contains("time_s") && f["time_s"].is_number()) fr.time_s = f["time_s"].get<double>();
    const std::string what = "tracks.json frame " + std::to_string(fr.index);
    for (const auto& o : f.at("objects")) {
      TrackObject ob;
      ob.id = o.at("id").get<int64_t>();
      ob.prompt = o.value("prompt", std::string());
      ob.score = o.at("score").get<double>();
      const auto box = o.at("box_xywh").get<std::vector<double>>();
      SEGMUX_CHECK(box.size() == 4, what, ": box_xywh must have 4 numbers");
      std::copy(box.begin(), box.end(), ob.box.begin());
      ob.rle = rle_from_json(o.at("mask_rle"), r.width, r.height, what);
      ob.area = rle_area(ob.rle);
      fr.objects.push_back(std::move(ob));
    }
    r.frames.push_back(std::move(fr));
  }
  std::sort(r.frames.begin(), r.frames.end(),
            [](const TrackFrame& a, const TrackFrame& b) { return a.index < b.index; });
  return r;
}

nlohmann::json compressed_rle(const RleMask& rle) {
  return {{"size", {rle.height, rle.width}}, {"counts", coco_counts_string(rle)}};
}

std::array<double, 4> pixel_box(const TrackObject& o, const Tracks& t) {
  return {round_decimals(o.box[0] * t.width, 2), round_decimals(o.box[1] * t.height, 2),
          round_decimals(o.box[2] * t.width, 2), round_decimals(o.box[3] * t.height, 2)};
}

std::vector<int64_t> object_ids(const Tracks& t) {
  std::vector<int64_t> ids;
  for (const auto& f : t.frames)
    for (const auto& o : f.objects) ids.push_back(o.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// CVAT's mask RLE: the mask inside its box [x0, x1] x [y0, y1], row-major, alternating runs from a
// run of 0s (possibly empty).
std::string cvat_rle(const BinaryMask& m, int x0, int y0, int x1, int y1) {
  std::ostringstream os;
  uint8_t current = 0;
  int64_t run = 0;
  bool first = true;
  auto flush = [&] {
    os << (first ? "" : ", ") << run;
    first = false;
  };
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) {
      const uint8_t v = m.at(y, x) ? 1 : 0;
      if (v != current) flush(), run = 0, current = v;
      ++run;
    }
  flush();
  return os.str();
}

// The visible pixels' box {x0, y0, x1, y1}; x1 < x0 when empty.
std::array<int, 4> mask_box(const BinaryMask& m) {
  std::array<int, 4> b{m.width, m.height, -1, -1};
  for (int y = 0; y < m.height; ++y)
    for (int x = 0; x < m.width; ++x)
      if (m.at(y, x)) b = {std::min(b[0], x), std::min(b[1], y), std::max(b[2], x), std::max(b[3], y)};
  return b;
}

}  // namespace

std::vector<ExportFormat> parse_export_formats(const std::vector<std::string>& names) {
  std::vector<ExportFormat> out;
  for (const std::string& list : names) {
    std::stringstream ss(list);
    std::string n;
    while (std::getline(ss, n, ',')) {
      ExportFormat f;
      if (n == "ytvis")
        f = ExportFormat::ytvis;
      else if (n == "coco")
        f = ExportFormat::coco;
      else if (n == "cvat")
        f = ExportFormat::cvat;
      else if (n == "labelstudio")
        f = ExportFormat::labelstudio;
      else
        fail("unknown output format '", n, "' (ytvis, coco, cvat or labelstudio)");
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    }
  }
  return out;
}

const char* export_file_name(ExportFormat format) {
  switch (format) {
    case ExportFormat::ytvis:
      return "ytvis_results.json";
    case ExportFormat::coco:
      return "coco_results.json";
    case ExportFormat::cvat:
      return "cvat_annotations.xml";
    case ExportFormat::labelstudio:
      return "labelstudio_tasks.json";
  }
  return "";
}

std::vector<std::string> export_file_names() {
  std::vector<std::string> names;
  for (auto f : {ExportFormat::ytvis, ExportFormat::coco, ExportFormat::cvat, ExportFormat::labelstudio})
    names.push_back(export_file_name(f));
  names.push_back(kReviewFramesFile);
  return names;
}

nlohmann::json ytvis_results(const nlohmann::json& tracks, const ExportContext& ctx) {
  const Tracks t = read_tracks(tracks);
  const size_t length = t.frames.empty() ? 0 : size_t(t.frames.back().index) + 1;
  nlohmann::json results = nlohmann::json::array();
  for (int64_t id : object_ids(t)) {
    if (std::none_of(t.frames.begin(), t.frames.end(), [&](const TrackFrame& f) {
          return std::any_of(f.objects.begin(), f.objects.end(),
                             [&](const TrackObject& o) { return o.id == id && o.area > 0; });
        }))
      continue;  // never visible
    nlohmann::json segs(length, nullptr), boxes(length, {0, 0, 0, 0}), areas(length, 0), scores(length, -1e8);
    double sum = 0;
    int n = 0, category = 1;
    for (const TrackFrame& f : t.frames)
      for (const TrackObject& o : f.objects) {
        if (o.id != id || o.area == 0) continue;  // not visible: not output on this frame
        segs[size_t(f.index)] = compressed_rle(o.rle);
        boxes[size_t(f.index)] = pixel_box(o, t);
        areas[size_t(f.index)] = o.area;
        scores[size_t(f.index)] = o.score;
        sum += o.score, ++n;
        category = t.category(o.prompt);
      }
    results.push_back({{"video_id", ctx.video_id},
                       {"category_id", category},
                       {"score", round_decimals(sum / n, kScoreDecimals)},
                       {"segmentations", std::move(segs)},
                       {"bboxes", std::move(boxes)},
                       {"areas", std::move(areas)},
                       {"per_frame_scores", std::move(scores)},
                       {"obj_id", id}});
  }
  return results;
}

nlohmann::json coco_results(const nlohmann::json& tracks) {
  const Tracks t = read_tracks(tracks);
  const double pixels = double(t.width) * double(t.height);
  nlohmann::json results = nlohmann::json::array();
  for (const TrackFrame& f : t.frames)
    for (const TrackObject& o : f.objects) {
      if (o.area == 0) continue;  // not visible on this frame: no detection to score
      results.push_back({{"image_id", f.index},
                         {"category_id", t.category(o.prompt)},
                         {"segmentation", compressed_rle(o.rle)},
                         {"score", o.score},
                         {"bbox", pixel_box(o, t)},
                         {"area", double(o.area) / pixels},
                         {"obj_id", o.id}});
    }
  return results;
}

nlohmann::json coco_image_results(const std::vector<std::pair<nlohmann::json, int64_t>>& images,
                                  const std::vector<std::string>& prompts) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& [doc, image_id] : images) {
    const nlohmann::json as_tracks = {
        {"width", doc.value("width", 0)},
        {"height", doc.value("height", 0)},
        {"prompts", prompts},
        {"frames", {{{"frame_index", 0}, {"objects", doc.value("objects", nlohmann::json())}}}}};
    for (nlohmann::json e : coco_results(as_tracks)) {
      e["image_id"] = image_id;
      results.push_back(std::move(e));
    }
  }
  return results;
}

int64_t coco_image_id(const std::string& path, size_t position) {
  const std::string stem = fs::path(path).stem().string();
  const bool number = !stem.empty() && stem.size() <= 18 &&
                      std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
  return number ? std::stoll(stem) : int64_t(position);
}

std::string cvat_xml(const nlohmann::json& tracks, const ExportContext& ctx) {
  const Tracks t = read_tracks(tracks);
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<annotations>\n  <version>1.1</version>\n  <meta>\n    <task>\n"
     << "      <name>" << xml_escape(ctx.media_name) << "</name>\n      <size>" << t.frames.size()
     << "</size>\n      <mode>annotation</mode>\n      <labels>\n";
  for (const std::string& p : t.prompts)
    os << "        <label>\n          <name>" << xml_escape(p) << "</name>\n          <type>mask</type>\n"
       << "          <attributes>\n            <attribute>\n              <name>obj_id</name>\n"
       << "              <mutable>False</mutable>\n              <input_type>number</input_type>\n"
       << "            </attribute>\n          </attributes>\n        </label>\n";
  os << "      </labels>\n    </task>\n  </meta>\n";
  char name[32];
  for (const TrackFrame& f : t.frames) {
    std::snprintf(name, sizeof name, "frame_%06d.png", f.index);
    os << "  <image id=\"" << f.index << "\" name=\"" << name << "\" width=\"" << t.width << "\" height=\"" << t.height
       << "\">\n";
    for (const TrackObject& o : f.objects) {
      const BinaryMask m = rle_decode(o.rle);
      const auto [x0, y0, x1, y1] = mask_box(m);
      if (x1 < x0) continue;
      os << "    <mask label=\"" << xml_escape(o.prompt) << "\" source=\"auto\" occluded=\"0\" rle=\""
         << cvat_rle(m, x0, y0, x1, y1) << "\" left=\"" << x0 << "\" top=\"" << y0 << "\" width=\"" << x1 - x0 + 1
         << "\" height=\"" << y1 - y0 + 1 << "\" z_order=\"0\">\n      <attribute name=\"obj_id\">" << o.id
         << "</attribute>\n    </mask>\n";
    }
    os << "  </image>\n";
  }
  os << "</annotations>\n";
  return os.str();
}

nlohmann::json labelstudio_tasks(const nlohmann::json& tracks, const ExportContext& ctx) {
  const Tracks t = read_tracks(tracks);
  const int frames_count = t.frames.empty() ? 0 : t.frames.back().index + 1;
  auto time_of = [&](const TrackFrame& f) { return round_decimals(f.time_s.value_or(f.index / ctx.fps), 6); };
  nlohmann::json result = nlohmann::json::array();
  double score_sum = 0;
  int score_n = 0;
  for (int64_t id : object_ids(t)) {
    nlohmann::json seq = nlohmann::json::array();
    std::string prompt;
    const TrackFrame* last_visible = nullptr;
    for (const TrackFrame& f : t.frames) {
      const TrackObject* obj = nullptr;
      for (const TrackObject& o : f.objects)
        if (o.id == id && o.area > 0) obj = &o;
      if (!obj) {
        // The object left: its last keyframe ends the interpolation there.
        if (last_visible && !seq.empty()) seq.back()["enabled"] = false;
        last_visible = nullptr;
        continue;
      }
      prompt = obj->prompt;
      score_sum += obj->score, ++score_n;
      auto pct = [](double v) { return round_decimals(100.0 * v, 4); };
      seq.push_back({{"frame", f.index + 1},  // Label Studio counts frames from 1
                     {"enabled", true},
                     {"rotation", 0},
                     {"x", pct(obj->box[0])},
                     {"y", pct(obj->box[1])},
                     {"width", pct(obj->box[2])},
                     {"height", pct(obj->box[3])},
                     {"time", time_of(f)}});
      last_visible = &f;
    }
    if (seq.empty()) continue;
    result.push_back({{"id", "obj" + std::to_string(id)},
                      {"type", "videorectangle"},
                      {"from_name", "box"},
                      {"to_name", "video"},
                      {"origin", "prediction"},
                      {"value",
                       {{"sequence", std::move(seq)},
                        {"labels", {prompt}},
                        {"framesCount", frames_count},
                        {"duration", round_decimals(frames_count / ctx.fps, 6)}}}});
  }
  nlohmann::json prediction = {{"model_version", "segmux"},
                               {"score", score_n ? round_decimals(score_sum / score_n, kScoreDecimals) : 0.0},
                               {"result", std::move(result)}};
  return nlohmann::json::array({{{"data", {{"video", ctx.media_name}}}, {"predictions", {std::move(prediction)}}}});
}

nlohmann::json review_frames(const nlohmann::json& tracks, const ExportContext& ctx) {
  const Tracks t = read_tracks(tracks);
  nlohmann::json lowest = nlohmann::json::array(), drops = nlohmann::json::array(), lost = nlohmann::json::array();
  struct Seen {
    int frame;
    double score;
  };
  std::map<int64_t, Seen> previous;  // each object's last frame with a visible mask
  std::vector<std::tuple<double, int, int64_t>> by_score;
  std::vector<std::tuple<double, int, int64_t, int, double>> by_drop;
  for (const TrackFrame& f : t.frames) {
    std::map<int64_t, bool> here;
    for (const TrackObject& o : f.objects) {
      here[o.id] = o.area > 0;
      if (o.area == 0) continue;  // not visible: listed under "lost"
      by_score.emplace_back(o.score, f.index, o.id);
      if (auto p = previous.find(o.id); p != previous.end() && p->second.score > o.score)
        by_drop.emplace_back(p->second.score - o.score, f.index, o.id, p->second.frame, p->second.score);
    }
    for (auto it = previous.begin(); it != previous.end();) {
      if (!here[it->first]) {
        lost.push_back({{"frame_index", f.index}, {"obj_id", it->first}, {"last_seen_frame", it->second.frame}});
        it = previous.erase(it);
      } else {
        ++it;
      }
    }
    for (const TrackObject& o : f.objects)
      if (o.area > 0) previous[o.id] = {f.index, o.score};
  }
  std::stable_sort(by_score.begin(), by_score.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::stable_sort(by_drop.begin(), by_drop.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  const size_t k = size_t(std::max(0, ctx.review_count));
  std::vector<int> frames;
  for (size_t i = 0; i < std::min(k, by_score.size()); ++i) {
    const auto& [score, frame, id] = by_score[i];
    lowest.push_back({{"frame_index", frame}, {"obj_id", id}, {"score", score}});
    frames.push_back(frame);
  }
  for (size_t i = 0; i < std::min(k, by_drop.size()); ++i) {
    const auto& [drop, frame, id, prev_frame, prev_score] = by_drop[i];
    drops.push_back({{"frame_index", frame},
                     {"obj_id", id},
                     {"drop", round_decimals(drop, kScoreDecimals)},
                     {"previous_frame", prev_frame},
                     {"previous_score", prev_score}});
    frames.push_back(frame);
  }
  if (lost.size() > k) lost.erase(lost.begin() + long(k), lost.end());
  for (const auto& l : lost) frames.push_back(l["frame_index"].get<int>());
  std::sort(frames.begin(), frames.end());
  frames.erase(std::unique(frames.begin(), frames.end()), frames.end());
  return {{"description",
           "frames to review first: the lowest object scores, the largest score drops from the object's previous "
           "visible frame, and objects whose mask vanished (at most " +
               std::to_string(k) + " each)"},
          {"frames", frames},
          {"lowest_scores", std::move(lowest)},
          {"largest_drops", std::move(drops)},
          {"lost", std::move(lost)}};
}

std::vector<std::string> write_exports(const std::string& dir, const nlohmann::json& tracks,
                                       const std::vector<ExportFormat>& formats, const ExportContext& ctx) {
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) {
    write_file_atomic(dir + "/" + name, text.data(), text.size());
    written.push_back(name);
  };
  auto json_text = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  };
  bool review = false;
  for (ExportFormat f : formats) {
    switch (f) {
      case ExportFormat::ytvis:
        put(export_file_name(f), json_text(ytvis_results(tracks, ctx)));
        break;
      case ExportFormat::coco:
        put(export_file_name(f), json_text(coco_results(tracks)));
        break;
      case ExportFormat::cvat:
        put(export_file_name(f), cvat_xml(tracks, ctx)), review = true;
        break;
      case ExportFormat::labelstudio:
        put(export_file_name(f), json_text(labelstudio_tasks(tracks, ctx))), review = true;
        break;
    }
  }
  if (review) put(kReviewFramesFile, json_text(review_frames(tracks, ctx)));
  return written;
}

}  // namespace segmux::pipeline
