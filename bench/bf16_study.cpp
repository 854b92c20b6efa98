// The bf16 study's figures (docs/bf16.md, scripts/bf16_study.sh): for each case of a study folder
// (tests/fixtures/sam31-tiny-bf16: CASE-fp32/ and CASE-bf16/, official request traces of the same
// requests run in fp32 and under bf16 autocast, tools/fixtures/gen_bf16_trace.py) and segmux's own
// outputs of those requests (OURS/CASE-fp32/tracks.json, OURS/CASE-bf16/tracks.json from
// `segmux track --requests --rle uncompressed`), compares the final output of every frame between
// pairs: official bf16 vs official fp32, ours bf16 vs official bf16, ours bf16 vs ours fp32, and the
// control ours fp32 vs official fp32 (exact in CI). Per object per frame: mask IoU and the score
// difference; per frame: whether the object ids agree. Prints Markdown; asserts nothing.
//
// Usage: bf16_study STUDY_DIR OURS_DIR CASE...
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json_limits.h"
#include "pipeline/masks/rle.h"

namespace {

using segmux::pipeline::BinaryMask;
using segmux::pipeline::RleMask;
using Json = nlohmann::json;

struct Object {
  double score = 0;
  RleMask mask;
};
using Frame = std::map<long long, Object>;  // by object id
using Video = std::map<int, Frame>;         // final output per frame index

RleMask rle_of(const Json& j, const std::string& what) {
  SEGMUX_CHECK(j.is_object() && j.contains("size") && j.contains("counts"), what, ": a mask is not {size, counts}");
  RleMask r;
  r.height = j["size"].at(0).get<int>();
  r.width = j["size"].at(1).get<int>();
  SEGMUX_CHECK(j["counts"].is_array(), what, ": mask counts are not a list of runs (use --rle uncompressed)");
  r.counts = j["counts"].get<std::vector<int64_t>>();
  return r;
}

// One official output (add_prompt, remove_object or a propagation yield) as the frame's latest state.
void put_official(Video& v, int frame, const Json& out, const std::string& what) {
  Frame f;
  const auto& ids = out.at("obj_ids");
  for (size_t k = 0; k < ids.size(); ++k)
    f[ids[k].get<long long>()] = Object{out.at("probs").at(k).get<double>(), rle_of(out.at("masks_rle").at(k), what)};
  v[frame] = std::move(f);
}

Video load_official(const std::string& path) {
  const Json t = segmux::read_untrusted_json_file(path);
  SEGMUX_CHECK(t.contains("requests"), path, ": not a request trace (no \"requests\")");
  Video v;
  for (const Json& r : t["requests"]) {
    if (r.contains("outputs") && r["outputs"].is_object() && r.contains("frame_index"))
      put_official(v, r["frame_index"].get<int>(), r["outputs"], path);
    if (r.contains("yields"))
      for (const Json& y : r["yields"]) put_official(v, y.at("frame_index").get<int>(), y, path);
  }
  return v;
}

Video load_ours(const std::string& path) {
  const Json t = segmux::read_untrusted_json_file(path);
  SEGMUX_CHECK(t.contains("frames"), path, ": not a tracks.json (no \"frames\")");
  Video v;
  for (const Json& fr : t["frames"]) {
    Frame f;
    for (const Json& o : fr.at("objects"))
      f[o.at("id").get<long long>()] = Object{o.at("score").get<double>(), rle_of(o.at("mask_rle"), path)};
    v[fr.at("frame_index").get<int>()] = std::move(f);
  }
  return v;
}

struct PairStats {
  int frames = 0, frames_same_ids = 0;
  std::vector<double> ious, score_deltas;
  int within_bar = 0;                     // IoU >= 0.99 or <= 16 px for a reference under 1,600 px
  std::map<int, double> worst_by_frame;   // frame -> worst IoU (1 when no common object)
  std::map<int, bool> same_ids_by_frame;  // frame -> ids agree
  double worst = 1;
  int worst_frame = -1;
  long long worst_obj = -1;
};

void compare_object(const Object& ref, const Object& got, int frame, long long id, PairStats& s) {
  const BinaryMask a = segmux::pipeline::rle_decode(ref.mask), b = segmux::pipeline::rle_decode(got.mask);
  SEGMUX_CHECK(a.height == b.height && a.width == b.width, "frame ", frame, " object ", id, ": mask sizes differ");
  long long diff = 0;
  for (size_t p = 0; p < a.pixels.size(); ++p) diff += (a.pixels[p] != 0) != (b.pixels[p] != 0);
  const double iou = segmux::pipeline::mask_iou(a, b);
  s.ious.push_back(iou);
  s.score_deltas.push_back(std::abs(got.score - ref.score));
  s.within_bar += iou >= 0.99 || (a.area() < 1600 && diff <= 16);
  double& w = s.worst_by_frame[frame];
  w = std::min(w, iou);
  if (iou < s.worst) s.worst = iou, s.worst_frame = frame, s.worst_obj = id;
}

PairStats compare(const Video& ref, const Video& got) {
  PairStats s;
  for (const auto& [frame, rf] : ref) {
    auto it = got.find(frame);
    if (it == got.end()) continue;
    ++s.frames;
    bool same = rf.size() == it->second.size();
    s.worst_by_frame[frame] = 1;
    for (const auto& [id, ro] : rf) {
      auto jt = it->second.find(id);
      if (jt == it->second.end()) {
        same = false;
        continue;
      }
      compare_object(ro, jt->second, frame, id, s);
    }
    s.frames_same_ids += same;
    s.same_ids_by_frame[frame] = same;
  }
  return s;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[size_t(std::lround(q * double(v.size() - 1)))];
}

double mean(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return v.empty() ? NAN : t / double(v.size());
}

void print_pair_row(const char* name, const PairStats& s) {
  const double n = double(s.ious.size());
  int small_delta = 0;
  for (double d : s.score_deltas) small_delta += d <= 1e-3;
  std::printf(
      "| %s | %d / %d | %zu | %.4f | %.4f | %.4f (frame %d, id %lld) | %.0f %% | %.0f %% | %.4f | %.4f | %.0f %% |\n",
      name, s.frames_same_ids, s.frames, s.ious.size(), mean(s.ious), quantile(s.ious, 0.5), s.worst, s.worst_frame,
      s.worst_obj,
      n ? 100.0 * double(std::count_if(s.ious.begin(), s.ious.end(), [](double x) { return x >= 0.99; })) / n : NAN,
      n ? 100.0 * s.within_bar / n : NAN, quantile(s.score_deltas, 1.0), quantile(s.score_deltas, 0.5),
      n ? 100.0 * small_delta / n : NAN);
}

struct Case {
  std::string name;
  Video off32, off16, our32, our16;
};

const char* kPairs[] = {"official bf16 vs official fp32", "ours bf16 vs official bf16", "ours bf16 vs ours fp32",
                        "ours fp32 vs official fp32 (control)"};

std::vector<PairStats> pairs_of(const Case& c) {
  return {compare(c.off32, c.off16), compare(c.off16, c.our16), compare(c.our32, c.our16), compare(c.off32, c.our32)};
}

void merge(PairStats& into, const PairStats& s) {
  into.frames += s.frames;
  into.frames_same_ids += s.frames_same_ids;
  into.ious.insert(into.ious.end(), s.ious.begin(), s.ious.end());
  into.score_deltas.insert(into.score_deltas.end(), s.score_deltas.begin(), s.score_deltas.end());
  into.within_bar += s.within_bar;
  if (s.worst < into.worst) into.worst = s.worst, into.worst_frame = s.worst_frame, into.worst_obj = s.worst_obj;
}

void print_table_head() {
  std::printf(
      "| pair (reference vs other) | frames with the same ids | object-frames | mean IoU | median IoU | worst IoU | "
      "IoU >= 0.99 | within the parity bar | max abs score diff | median abs score diff | score diff <= 1e-3 |\n"
      "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
}

void print_frames(const Case& c, const std::vector<PairStats>& p) {
  std::printf(
      "\nPer frame (worst mask IoU over the objects both sides have; * = the object ids differ):\n\n"
      "| frame | official fp32 ids | official bf16 ids | ours bf16 ids | off. bf16 vs off. fp32 | ours bf16 vs "
      "off. bf16 | ours bf16 vs ours fp32 |\n|---:|---|---|---|---:|---:|---:|\n");
  auto ids = [](const Video& v, int f) {
    std::string s;
    auto it = v.find(f);
    if (it == v.end()) return std::string("-");
    for (const auto& [id, o] : it->second) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s.empty() ? std::string("none") : s;
  };
  for (const auto& [f, unused] : c.off32) {
    std::printf("| %d | %s | %s | %s |", f, ids(c.off32, f).c_str(), ids(c.off16, f).c_str(), ids(c.our16, f).c_str());
    for (int k = 0; k < 3; ++k) {
      auto it = p[size_t(k)].worst_by_frame.find(f);
      if (it == p[size_t(k)].worst_by_frame.end())
        std::printf(" - |");
      else
        std::printf(" %.3f%s |", it->second, p[size_t(k)].same_ids_by_frame.at(f) ? "" : " *");
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bf16_study STUDY_DIR OURS_DIR CASE...\n");
    return 2;
  }
  try {
    const std::string study = argv[1], ours = argv[2];
    std::vector<Case> cases;
    for (int a = 3; a < argc; ++a) {
      const std::string n = argv[a];
      cases.push_back({n, load_official(study + "/" + n + "-fp32/video/trace.json"),
                       load_official(study + "/" + n + "-bf16/video/trace.json"),
                       load_ours(ours + "/" + n + "-fp32/tracks.json"),
                       load_ours(ours + "/" + n + "-bf16/tracks.json")});
    }
    std::vector<PairStats> total(4);
    std::vector<std::vector<PairStats>> per_case;
    for (const Case& c : cases) {
      per_case.push_back(pairs_of(c));
      for (size_t k = 0; k < 4; ++k) merge(total[k], per_case.back()[k]);
    }
    std::printf("All cases (%zu), every object of every frame:\n\n", cases.size());
    print_table_head();
    for (size_t k = 0; k < 4; ++k) print_pair_row(kPairs[k], total[k]);
    for (size_t i = 0; i < cases.size(); ++i) {
      std::printf("\n### %s\n\n", cases[i].name.c_str());
      print_table_head();
      for (size_t k = 0; k < 4; ++k) print_pair_row(kPairs[k], per_case[i][k]);
      print_frames(cases[i], per_case[i]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bf16_study: %s\n", e.what());
    return 1;
  }
  return 0;
}
