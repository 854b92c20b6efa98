#include "pipeline/outputs/eval_inputs.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/json_limits.h"
#include "pipeline/masks/coco_rle.h"
#include "pipeline/media/label_png.h"
#include "pipeline/media/video_io.h"

namespace segmux::pipeline {

namespace fs = std::filesystem;

namespace {

// Evaluation inputs are whole videos' worth of RLE: larger than a config file, still bounded.
const JsonLimits kEvalJsonLimits{.max_depth = 16, .max_bytes = size_t(1) << 30, .max_values = size_t(1) << 26};
// The most frames a YTVIS video may declare ('length'): its frame list is made from the number alone;
// and all the videos of one file together (each declares its own).
constexpr int64_t kMaxEvalFrames = int64_t(1) << 20, kMaxEvalTotalFrames = int64_t(1) << 24;

int64_t json_int(const nlohmann::json& j, const char* key, const std::string& what) {
  SEGMUX_CHECK(j.is_object() && j.contains(key) && j[key].is_number_integer(), what, ": '", key,
               "' must be an integer, got ", j.is_object() && j.contains(key) ? describe_json(j[key]) : "nothing");
  return j[key].get<int64_t>();
}

int checked_size(const nlohmann::json& j, const char* key, const std::string& what) {
  const int64_t v = json_int(j, key, what);
  SEGMUX_CHECK(v > 0 && v <= (int64_t(1) << 20), what, ": '", key, "' ", v, " is not a frame size");
  return int(v);
}

// Every mask of the video is expanded to its frame size when evaluated: refuse what no frame has.
void check_frame_pixels(const MaskVideo& v, const std::string& what) {
  SEGMUX_CHECK(int64_t(v.width) * v.height <= kMaxFramePixels, what, ": frames of ", v.width, "x", v.height,
               " pixels (at most ", kMaxFramePixels >> 20, " Mpixel)");
}

MaskVideo from_tracks_json(const nlohmann::json& t, const std::string& what) {
  MaskVideo v;
  v.width = checked_size(t, "width", what);
  v.height = checked_size(t, "height", what);
  check_frame_pixels(v, what);
  std::vector<std::string> prompts;
  if (t.contains("prompts") && t["prompts"].is_array())
    for (const auto& p : t["prompts"]) prompts.push_back(p.is_string() ? p.get<std::string>() : "");
  else if (t.contains("prompt") && t["prompt"].is_string())
    prompts.push_back(t["prompt"].get<std::string>());
  SEGMUX_CHECK(t.contains("frames") && t["frames"].is_array(), what, ": no 'frames' list");
  std::map<int64_t, std::pair<double, int>> score_sum;
  for (const auto& fr : t["frames"]) {
    const int64_t f = json_int(fr, "frame_index", what);
    SEGMUX_CHECK(f >= 0 && f < (int64_t(1) << 30), what, ": frame_index ", f, " is out of range");
    const std::string fwhat = what + ": frame " + std::to_string(f);
    v.frames.push_back(int(f));
    SEGMUX_CHECK(fr.contains("objects") && fr["objects"].is_array(), fwhat, ": no 'objects' list");
    for (const auto& o : fr["objects"]) {
      const int64_t id = json_int(o, "id", fwhat);
      v.objects[id][int(f)] = rle_from_json(o.value("mask_rle", nlohmann::json()), v.width, v.height, fwhat);
      if (o.contains("score") && o["score"].is_number()) {
        score_sum[id].first += o["score"].get<double>();
        ++score_sum[id].second;
      }
      const std::string prompt = o.contains("prompt") && o["prompt"].is_string() ? o["prompt"].get<std::string>() : "";
      const auto at = std::find(prompts.begin(), prompts.end(), prompt);
      v.categories[id] = at == prompts.end() ? 1 : int(at - prompts.begin()) + 1;
    }
  }
  for (const auto& [id, s] : score_sum) v.scores[id] = s.first / s.second;  // official: mean over frames
  std::sort(v.frames.begin(), v.frames.end());
  v.frames.erase(std::unique(v.frames.begin(), v.frames.end()), v.frames.end());
  v.description = what + " (segmux tracks, " + std::to_string(v.frames.size()) + " frames, " +
                  std::to_string(v.objects.size()) + " objects)";
  return v;
}

// PNG files of a folder, sorted, with their frame indices (numeric names: the number; else the order).
std::vector<std::pair<int, std::string>> png_frames(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".png") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  bool numeric = true;
  for (const auto& n : names) {
    const std::string stem = fs::path(n).stem().string();
    numeric = numeric && !stem.empty() && stem.size() <= 9 &&
              std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
  }
  std::vector<std::pair<int, std::string>> out;
  for (size_t i = 0; i < names.size(); ++i)
    out.emplace_back(numeric ? std::stoi(fs::path(names[i]).stem().string()) : int(i), dir + "/" + names[i]);
  return out;
}

// The COCO runs (column-major, rle.h) of every non-zero value of a label image, made in one pass: memory
// grows with the runs, not with the number of values times the pixels (a 16-bit PNG may hold 65535).
std::map<int, RleMask> runs_by_value(const LabelImage& img) {
  struct Open {
    RleMask rle;
    int64_t end = 0;  // where the value's last 1-run ends (column-major)
  };
  std::map<int, Open> open;
  int64_t pos = 0;
  for (int x = 0; x < img.width; ++x)
    for (int y = 0; y < img.height; ++y, ++pos) {
      const int value = img.values[size_t(y) * size_t(img.width) + size_t(x)];
      if (value == 0) continue;
      auto [it, added] = open.try_emplace(value);
      Open& o = it->second;
      if (added) o.rle = RleMask{img.height, img.width, {}};
      if (!added && o.end == pos) {
        ++o.rle.counts.back();
      } else {
        o.rle.counts.push_back(pos - o.end);  // the 0-run before (0 long for a mask starting at pixel 0)
        o.rle.counts.push_back(1);
      }
      o.end = pos + 1;
    }
  std::map<int, RleMask> out;
  for (auto& [value, o] : open) {
    if (o.end < pos) o.rle.counts.push_back(pos - o.end);
    out.emplace(value, std::move(o.rle));
  }
  return out;
}

// Label PNGs: `id_offset` turns a value into an object id (segmux masks/: value - 1; DAVIS: the value);
// `void_value` (DAVIS 255) marks pixels not judged (-1: none).
MaskVideo from_label_pngs(const std::string& dir, int id_offset, int void_value, const std::string& kind) {
  MaskVideo v;
  const auto frames = png_frames(dir);
  SEGMUX_CHECK(!frames.empty(), "'", dir, "' holds no PNG files");
  for (const auto& [f, path] : frames) {
    const LabelImage img = read_label_png(path);
    if (v.frames.empty()) v.width = img.width, v.height = img.height;
    SEGMUX_CHECK(img.width == v.width && img.height == v.height, "'", path, "' is ", img.width, "x", img.height,
                 " but the first frame is ", v.width, "x", v.height);
    v.frames.push_back(f);
    for (auto& [value, rle] : runs_by_value(img)) {
      if (value == void_value)
        v.void_px[f] = std::move(rle);
      else
        v.objects[int64_t(value) + id_offset][f] = std::move(rle);
    }
  }
  v.description = "'" + dir + "' (" + kind + ", " + std::to_string(v.frames.size()) + " frames, " +
                  std::to_string(v.objects.size()) + " objects)";
  return v;
}

int64_t pick_video(const std::vector<int64_t>& ids, const EvalInputOptions& opt, const std::string& what) {
  SEGMUX_CHECK(!ids.empty(), what, " holds no video");
  if (opt.video_id) {
    SEGMUX_CHECK(std::find(ids.begin(), ids.end(), *opt.video_id) != ids.end(), what, " has no video ", *opt.video_id);
    return *opt.video_id;
  }
  const int64_t first = ids.front();
  SEGMUX_CHECK(std::all_of(ids.begin(), ids.end(), [&](int64_t id) { return id == first; }), what,
               " holds several videos: say which with --video-id");
  return first;
}

// One video's masklets: `segmentations` lists one RLE or null per frame.
void add_masklet(MaskVideo& v, int64_t id, const nlohmann::json& segs, const std::string& what) {
  SEGMUX_CHECK(segs.is_array(), what, ": 'segmentations' must be a list (one mask or null per frame)");
  for (size_t f = 0; f < segs.size(); ++f) {
    if (segs[f].is_null()) continue;
    v.objects[id][int(f)] = rle_from_json(segs[f], v.width, v.height, what + " frame " + std::to_string(f));
  }
  v.objects.try_emplace(id);  // an object that never shows is still an object
}

MaskVideo from_ytvis_annotations(const nlohmann::json& d, const EvalInputOptions& opt, const std::string& what) {
  SEGMUX_CHECK(d["videos"].is_array() && d["annotations"].is_array(), what,
               ": 'videos' and 'annotations' must be lists");
  std::vector<int64_t> ids;
  for (const auto& vid : d["videos"]) ids.push_back(json_int(vid, "id", what + ": a video"));
  const int64_t video = pick_video(ids, opt, what);
  MaskVideo v;
  int length = 0;
  for (const auto& vid : d["videos"]) {
    if (json_int(vid, "id", what) != video) continue;
    v.width = checked_size(vid, "width", what);
    v.height = checked_size(vid, "height", what);
    check_frame_pixels(v, what);
    const int64_t declared = vid.contains("length") ? json_int(vid, "length", what)
                                                    : int64_t(vid.value("file_names", nlohmann::json::array()).size());
    SEGMUX_CHECK(declared <= kMaxEvalFrames, what, ": video ", video, " declares ", declared, " frames (at most ",
                 kMaxEvalFrames, ")");
    length = int(std::max<int64_t>(declared, 0));
  }
  SEGMUX_CHECK(length > 0, what, ": video ", video, " has no frames ('length' or 'file_names')");
  for (int f = 0; f < length; ++f) v.frames.push_back(f);
  for (const auto& a : d["annotations"]) {
    if (json_int(a, "video_id", what + ": an annotation") != video) continue;
    const int64_t id = json_int(a, "id", what + ": an annotation");
    const std::string awhat = what + ": annotation " + std::to_string(id);
    add_masklet(v, id, a.value("segmentations", nlohmann::json()), awhat);
    SEGMUX_CHECK(v.objects[id].empty() || v.objects[id].rbegin()->first < length, awhat,
                 " has more frames than the video");
    if (a.contains("category_id")) v.categories[id] = int(json_int(a, "category_id", awhat));
  }
  v.description = what + " (YTVIS annotations, video " + std::to_string(video) + ", " + std::to_string(length) +
                  " frames, " + std::to_string(v.objects.size()) + " objects)";
  return v;
}

MaskVideo from_ytvis_results(const nlohmann::json& d, const EvalInputOptions& opt, const std::string& what) {
  std::vector<int64_t> ids;
  for (const auto& r : d) ids.push_back(json_int(r, "video_id", what + ": a result"));
  const int64_t video = pick_video(ids, opt, what);
  MaskVideo v;
  int64_t index = 0, frames = 0;
  for (const auto& r : d) {
    const int64_t id = index++;
    if (json_int(r, "video_id", what) != video) continue;
    const std::string rwhat = what + ": result " + std::to_string(id);
    const nlohmann::json& segs = r.value("segmentations", nlohmann::json());
    SEGMUX_CHECK(segs.is_array(), rwhat, ": 'segmentations' must be a list");
    for (const auto& s : segs)  // the size comes from the first mask
      if (!s.is_null() && v.width == 0 && s.is_object() && s.contains("size") && s["size"].is_array() &&
          s["size"].size() == 2 && s["size"][0].is_number_integer() && s["size"][1].is_number_integer()) {
        v.height = int(std::clamp<int64_t>(s["size"][0].get<int64_t>(), 0, 1 << 20));
        v.width = int(std::clamp<int64_t>(s["size"][1].get<int64_t>(), 0, 1 << 20));
      }
    SEGMUX_CHECK(v.width > 0 && v.height > 0, rwhat, ": no mask gives the video's size");
    check_frame_pixels(v, rwhat);
    add_masklet(v, id, segs, rwhat);
    frames = std::max<int64_t>(frames, int64_t(segs.size()));
    if (r.contains("score") && r["score"].is_number()) v.scores[id] = r["score"].get<double>();
    if (r.contains("category_id")) v.categories[id] = int(json_int(r, "category_id", rwhat));
  }
  for (int f = 0; f < frames; ++f) v.frames.push_back(f);
  v.description =
      what + " (YTVIS results, video " + std::to_string(video) + ", " + std::to_string(v.objects.size()) + " objects)";
  return v;
}

// The video ids of a YTVIS json (annotations: its videos; results: the ids its entries name), in order.
std::vector<int64_t> ytvis_video_ids(const nlohmann::json& d, const std::string& what) {
  std::vector<int64_t> ids;
  if (d.is_object() && d.contains("videos") && d["videos"].is_array()) {
    for (const auto& v : d["videos"]) ids.push_back(json_int(v, "id", what + ": a video"));
  } else if (d.is_array()) {
    for (const auto& r : d) ids.push_back(json_int(r, "video_id", what + ": a result"));
  }
  std::vector<int64_t> unique;
  for (int64_t id : ids)
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  return unique;
}

MaskVideo from_json_file(const std::string& path, const EvalInputOptions& opt) {
  const nlohmann::json d = read_untrusted_json_file(path, kEvalJsonLimits);
  const std::string what = "'" + path + "'";
  if (d.is_object() && d.contains("format") && d["format"].is_string() &&
      d["format"].get<std::string>().rfind("segmux-tracks", 0) == 0)
    return from_tracks_json(d, what);
  if (d.is_object() && d.contains("videos") && d.contains("annotations")) return from_ytvis_annotations(d, opt, what);
  if (d.is_array() && !d.empty() && d[0].is_object() && d[0].contains("segmentations"))
    return from_ytvis_results(d, opt, what);
  fail(what, " is neither a segmux tracks.json, YTVIS annotations nor a YTVIS results list");
}

}  // namespace

RleMask rle_from_json(const nlohmann::json& j, int width, int height, const std::string& what) {
  SEGMUX_CHECK(j.is_object() && j.contains("counts"), what, ": a mask must be COCO RLE {\"size\", \"counts\"}, got ",
               j.is_array() ? "a polygon (convert it to RLE first)" : describe_json(j));
  const nlohmann::json& size = j.value("size", nlohmann::json());
  SEGMUX_CHECK(size.is_array() && size.size() == 2 && size[0].is_number_integer() && size[1].is_number_integer(), what,
               ": 'size' must be [height, width]");
  const int64_t h = size[0].get<int64_t>(), w = size[1].get<int64_t>();
  SEGMUX_CHECK(h == height && w == width, what, ": a mask of ", w, "x", h, " in a ", width, "x", height, " video");
  const nlohmann::json& counts = j["counts"];
  if (counts.is_string()) return coco_rle_from_string(counts.get<std::string>(), height, width);
  SEGMUX_CHECK(counts.is_array(), what, ": 'counts' must be a string or a list of runs");
  RleMask r{height, width, {}};
  const int64_t pixels = int64_t(height) * width;
  int64_t total = 0;
  for (const auto& c : counts) {
    SEGMUX_CHECK(c.is_number_integer() && c.get<int64_t>() >= 0, what, ": a run must be a count >= 0");
    SEGMUX_CHECK(c.get<int64_t>() <= pixels - total, what, ": the runs cover more than the ", pixels, " pixels");
    r.counts.push_back(c.get<int64_t>());
    total += r.counts.back();
  }
  SEGMUX_CHECK(total == pixels, what, ": the runs cover ", total, " of ", pixels, " pixels");
  return r;
}

std::vector<std::pair<int64_t, MaskVideo>> load_ytvis_videos(const std::string& path) {
  const nlohmann::json d = read_untrusted_json_file(path, kEvalJsonLimits);
  const std::string what = "'" + path + "'";
  const bool annotations = d.is_object() && d.contains("videos") && d.contains("annotations");
  SEGMUX_CHECK(annotations || (d.is_array() && !d.empty() && d[0].is_object() && d[0].contains("segmentations")), what,
               " is not a YTVIS json (annotations or a results list)");
  std::vector<std::pair<int64_t, MaskVideo>> out;
  int64_t frames = 0;
  for (int64_t id : ytvis_video_ids(d, what)) {
    const EvalInputOptions one{.video_id = id};
    out.emplace_back(id, annotations ? from_ytvis_annotations(d, one, what) : from_ytvis_results(d, one, what));
    frames += int64_t(out.back().second.frames.size());
    SEGMUX_CHECK(frames <= kMaxEvalTotalFrames, what, ": its videos declare more than ", kMaxEvalTotalFrames,
                 " frames in all");
  }
  return out;
}

nlohmann::json read_eval_json(const std::string& path) { return read_untrusted_json_file(path, kEvalJsonLimits); }

MaskVideo load_mask_video(const std::string& path, const EvalInputOptions& opt) {
  SEGMUX_CHECK(fs::exists(path), "'", path, "' does not exist");
  if (!fs::is_directory(path)) return from_json_file(path, opt);
  if (fs::is_regular_file(path + "/tracks.json")) return from_json_file(path + "/tracks.json", opt);
  if (fs::is_directory(path + "/masks")) return from_label_pngs(path + "/masks", -1, -1, "segmux id masks");
  return from_label_pngs(path, 0, 255, "DAVIS label PNGs");
}

}  // namespace segmux::pipeline
