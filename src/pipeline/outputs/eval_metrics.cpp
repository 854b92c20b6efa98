#include "pipeline/outputs/eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace segmux::pipeline {

namespace {

void check_same_size(const BinaryMask& a, const BinaryMask& b, const char* what) {
  SEGMUX_CHECK(a.width == b.width && a.height == b.height, what, ": masks of ", a.width, "x", a.height, " and ",
               b.width, "x", b.height, " cannot be compared");
}

// Pixels of `mask` outside the void pixels (all of them without void pixels).
BinaryMask without_void(const BinaryMask& mask, const BinaryMask* void_px) {
  if (!void_px) return mask;
  BinaryMask m = mask;
  for (size_t i = 0; i < m.pixels.size(); ++i) m.pixels[i] = m.pixels[i] && !void_px->pixels[i];
  return m;
}

// skimage.morphology.disk(r): the offsets (dx, dy) with dx^2 + dy^2 <= r^2.
std::vector<std::pair<int, int>> disk_offsets(int r) {
  std::vector<std::pair<int, int>> d;
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx)
      if (dx * dx + dy * dy <= r * r) d.emplace_back(dx, dy);
  return d;
}

BinaryMask dilate(const BinaryMask& m, const std::vector<std::pair<int, int>>& disk) {
  BinaryMask out(m.height, m.width);
  for (int y = 0; y < m.height; ++y)
    for (int x = 0; x < m.width; ++x) {
      if (!m.at(y, x)) continue;
      for (auto [dx, dy] : disk) {
        const int xx = x + dx, yy = y + dy;
        if (xx >= 0 && yy >= 0 && xx < m.width && yy < m.height) out.at(yy, xx) = 1;
      }
    }
  return out;
}

int64_t count_and(const BinaryMask& a, const BinaryMask& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) n += (a.pixels[i] && b.pixels[i]) ? 1 : 0;
  return n;
}

double mean_of(const std::vector<double>& v, size_t from, size_t to) {
  if (to <= from) return std::numeric_limits<double>::quiet_NaN();
  return std::accumulate(v.begin() + long(from), v.begin() + long(to), 0.0) / double(to - from);
}

}  // namespace

double region_similarity(const BinaryMask& pred, const BinaryMask& gt, const BinaryMask* void_px) {
  check_same_size(pred, gt, "J");
  if (void_px) check_same_size(pred, *void_px, "J (void pixels)");
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < pred.pixels.size(); ++i) {
    if (void_px && void_px->pixels[i]) continue;
    const bool p = pred.pixels[i] != 0, g = gt.pixels[i] != 0;
    inter += (p && g) ? 1 : 0;
    uni += (p || g) ? 1 : 0;
  }
  return uni == 0 ? 1.0 : double(inter) / double(uni);
}

BinaryMask boundary_map(const BinaryMask& m) {
  const int h = m.height, w = m.width;
  BinaryMask b(h, w);
  auto v = [&](int y, int x) -> bool { return y < h && x < w && m.at(y, x) != 0; };  // beyond the edge: 0
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const bool s = v(y, x);
      bool edge;
      if (y == h - 1 && x == w - 1)
        edge = false;  // seg2bmap clears the last pixel
      else if (y == h - 1)
        edge = s != v(y, x + 1);  // the last row compares with the right neighbour only
      else if (x == w - 1)
        edge = s != v(y + 1, x);  // the last column with the lower neighbour only
      else
        edge = s != v(y, x + 1) || s != v(y + 1, x) || s != v(y + 1, x + 1);
      b.at(y, x) = edge ? 1 : 0;
    }
  return b;
}

double boundary_measure(const BinaryMask& pred, const BinaryMask& gt, const BinaryMask* void_px, double bound_th) {
  check_same_size(pred, gt, "F");
  if (void_px) check_same_size(pred, *void_px, "F (void pixels)");
  SEGMUX_CHECK(bound_th > 0, "F: the boundary tolerance must be positive, got ", bound_th);
  const double diag = std::hypot(double(pred.height), double(pred.width));
  const int r = bound_th >= 1 ? int(bound_th) : int(std::ceil(bound_th * diag));
  const BinaryMask fg = boundary_map(without_void(pred, void_px)), gb = boundary_map(without_void(gt, void_px));
  const auto disk = disk_offsets(r);
  const int64_t n_fg = fg.area(), n_gt = gb.area();
  double precision, recall;
  if (n_fg == 0 && n_gt > 0) {
    precision = 1, recall = 0;
  } else if (n_fg > 0 && n_gt == 0) {
    precision = 0, recall = 1;
  } else if (n_fg == 0 && n_gt == 0) {
    precision = 1, recall = 1;
  } else {
    precision = double(count_and(fg, dilate(gb, disk))) / double(n_fg);
    recall = double(count_and(gb, dilate(fg, disk))) / double(n_gt);
  }
  return precision + recall == 0 ? 0.0 : 2 * precision * recall / (precision + recall);
}

SeriesStats series_stats(const std::vector<double>& v) {
  SeriesStats s;
  if (v.empty()) return s;
  s.mean = mean_of(v, 0, v.size());
  s.recall = double(std::count_if(v.begin(), v.end(), [](double x) { return x > 0.5; })) / double(v.size());
  // Four bins between the frames round(linspace(1, n, 5)) - 1, each bin including its end frame.
  const size_t n = v.size();
  size_t ids[5];
  for (int i = 0; i < 5; ++i) ids[i] = size_t(std::lround(1.0 + double(n - 1) * i / 4.0 + 1e-10)) - 1;
  const double first = mean_of(v, ids[0], std::min(n, ids[1] + 1));
  const double last = mean_of(v, ids[3], std::min(n, ids[4] + 1));
  s.decay = std::isnan(first) || std::isnan(last) ? 0.0 : first - last;
  return s;
}

ObjectMatching parse_object_matching(const std::string& name) {
  if (name == "ids") return ObjectMatching::ids;
  if (name == "best") return ObjectMatching::best;
  fail("unknown object matching '", name, "' (ids or best)");
}

std::vector<int> best_assignment(const std::vector<std::vector<double>>& score) {
  const size_t rows = score.size(), cols = rows ? score[0].size() : 0;
  for (const auto& r : score) SEGMUX_CHECK(r.size() == cols, "best_assignment: rows of different lengths");
  const size_t n = std::max(rows, cols);
  if (n == 0) return {};
  // The Hungarian method (potentials u, v; 1-based with a virtual column 0) on the square matrix of
  // costs -score, padded with 0.
  auto cost = [&](size_t i, size_t j) { return i < rows && j < cols ? -score[i][j] : 0.0; };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0), v(n + 1, 0);
  std::vector<size_t> p(n + 1, 0), way(n + 1, 0);
  for (size_t i = 1; i <= n; ++i) {
    p[0] = i;
    size_t j0 = 0;
    std::vector<double> minv(n + 1, inf);
    std::vector<bool> used(n + 1, false);
    do {
      used[j0] = true;
      const size_t i0 = p[j0];
      double delta = inf;
      size_t j1 = 0;
      for (size_t j = 1; j <= n; ++j) {
        if (used[j]) continue;
        const double cur = cost(i0 - 1, j - 1) - u[i0] - v[j];
        if (cur < minv[j]) minv[j] = cur, way[j] = j0;
        if (minv[j] < delta) delta = minv[j], j1 = j;
      }
      for (size_t j = 0; j <= n; ++j) {
        if (used[j])
          u[p[j]] += delta, v[j] -= delta;
        else
          minv[j] -= delta;
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const size_t j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> row_to_col(rows, -1);
  for (size_t j = 1; j <= n; ++j)
    if (p[j] - 1 < rows && j - 1 < cols) row_to_col[p[j] - 1] = int(j - 1);
  return row_to_col;
}

namespace {

const RleMask* find_mask(const std::map<int, RleMask>& masks, int frame) {
  auto it = masks.find(frame);
  return it == masks.end() ? nullptr : &it->second;
}

BinaryMask mask_or_empty(const RleMask* rle, int width, int height) {
  if (!rle) return BinaryMask(height, width);
  SEGMUX_CHECK(rle->width == width && rle->height == height, "a mask of ", rle->width, "x", rle->height, " in a ",
               width, "x", height, " video");
  return rle_decode(*rle);
}

// Per-frame J and F of one predicted object (or none) against one ground-truth object.
struct PairSeries {
  std::vector<double> j, f;
};

PairSeries pair_series(const std::map<int, RleMask>* pred, const std::map<int, RleMask>& gt, const MaskVideo& gtv,
                       const std::vector<int>& frames, const EvalOptions& opt) {
  PairSeries s;
  for (int frame : frames) {
    const BinaryMask p = mask_or_empty(pred ? find_mask(*pred, frame) : nullptr, gtv.width, gtv.height);
    const BinaryMask g = mask_or_empty(find_mask(gt, frame), gtv.width, gtv.height);
    const RleMask* void_rle = find_mask(gtv.void_px, frame);
    const BinaryMask void_px = mask_or_empty(void_rle, gtv.width, gtv.height);
    const BinaryMask* vp = void_rle ? &void_px : nullptr;
    s.j.push_back(region_similarity(p, g, vp));
    s.f.push_back(boundary_measure(p, g, vp, opt.bound_th));
  }
  return s;
}

std::vector<int> frames_to_evaluate(const MaskVideo& gt, bool skip_first_last) {
  std::vector<int> frames = gt.frames;
  if (skip_first_last && frames.size() > 2) frames = std::vector<int>(frames.begin() + 1, frames.end() - 1);
  return frames;
}

}  // namespace

VideoScores evaluate_video(const MaskVideo& pred, const MaskVideo& gt, const EvalOptions& opt) {
  SEGMUX_CHECK(pred.width == gt.width && pred.height == gt.height, "the prediction is ", pred.width, "x", pred.height,
               " but the ground truth is ", gt.width, "x", gt.height);
  SEGMUX_CHECK(!gt.objects.empty(), "the ground truth (", gt.description, ") has no objects");
  const std::vector<int> frames = frames_to_evaluate(gt, opt.skip_first_last);
  SEGMUX_CHECK(!frames.empty(), "the ground truth (", gt.description, ") has no frames to evaluate");
  std::vector<int64_t> gt_ids, pred_ids;
  for (const auto& [id, masks] : gt.objects) gt_ids.push_back(id);
  for (const auto& [id, masks] : pred.objects) pred_ids.push_back(id);

  // Every pairing's series (J mean is what the best matching maximises).
  std::vector<std::vector<PairSeries>> series(gt_ids.size());
  std::vector<std::vector<double>> j_mean(gt_ids.size());
  for (size_t g = 0; g < gt_ids.size(); ++g)
    for (size_t p = 0; p < pred_ids.size(); ++p) {
      if (opt.matching == ObjectMatching::ids && pred_ids[p] != gt_ids[g]) {
        series[g].emplace_back();
        j_mean[g].push_back(0);
        continue;
      }
      series[g].push_back(pair_series(&pred.objects.at(pred_ids[p]), gt.objects.at(gt_ids[g]), gt, frames, opt));
      j_mean[g].push_back(series_stats(series[g].back().j).mean);
    }
  std::vector<int> match(gt_ids.size(), -1);
  if (opt.matching == ObjectMatching::best) {
    match = best_assignment(j_mean);
  } else {
    for (size_t g = 0; g < gt_ids.size(); ++g)
      for (size_t p = 0; p < pred_ids.size(); ++p)
        if (pred_ids[p] == gt_ids[g]) match[g] = int(p);
  }

  VideoScores out;
  out.frames = int(frames.size());
  std::vector<bool> pred_used(pred_ids.size(), false);
  for (size_t g = 0; g < gt_ids.size(); ++g) {
    ObjectScore o;
    o.gt_id = gt_ids[g];
    const PairSeries s =
        match[g] >= 0 ? series[g][size_t(match[g])] : pair_series(nullptr, gt.objects.at(gt_ids[g]), gt, frames, opt);
    if (match[g] >= 0) o.pred_id = pred_ids[size_t(match[g])], pred_used[size_t(match[g])] = true;
    o.j = series_stats(s.j);
    o.f = series_stats(s.f);
    out.objects.push_back(o);
  }
  for (size_t p = 0; p < pred_ids.size(); ++p)
    if (!pred_used[p]) out.unmatched_pred.push_back(pred_ids[p]);
  const double n = double(out.objects.size());
  for (const ObjectScore& o : out.objects) {
    out.j.mean += o.j.mean / n, out.j.recall += o.j.recall / n, out.j.decay += o.j.decay / n;
    out.f.mean += o.f.mean / n, out.f.recall += o.f.recall / n, out.f.decay += o.f.decay / n;
  }
  out.jf = (out.j.mean + out.f.mean) / 2;
  out.ap = video_mask_ap(pred, gt);
  return out;
}

double masklet_iou(const std::map<int, RleMask>& a, const std::map<int, RleMask>& b) {
  int64_t inter = 0, uni = 0;
  std::map<int, std::pair<const RleMask*, const RleMask*>> frames;
  for (const auto& [f, m] : a) frames[f].first = &m;
  for (const auto& [f, m] : b) frames[f].second = &m;
  for (const auto& [f, pair] : frames) {
    const auto [x, y] = pair;
    if (x && y) {
      const BinaryMask p = rle_decode(*x), q = rle_decode(*y);
      SEGMUX_CHECK(p.pixels.size() == q.pixels.size(), "frame ", f, ": masks of different sizes");
      for (size_t i = 0; i < p.pixels.size(); ++i) {
        inter += (p.pixels[i] && q.pixels[i]) ? 1 : 0;
        uni += (p.pixels[i] || q.pixels[i]) ? 1 : 0;
      }
    } else {
      uni += rle_area(x ? *x : *y);
    }
  }
  return uni > 0 ? double(inter) / double(uni) : 0.0;
}

namespace {

constexpr int kIouThresholds = 10;  // 0.50, 0.55, ..., 0.95

// For each prediction (rows of `iou`, in score order): whether it matched a ground truth at threshold
// `thr`, COCOeval's greedy way (the unmatched ground truth of highest IoU, at least thr).
std::vector<bool> greedy_matches(const std::vector<std::vector<double>>& iou, size_t num_gt, double thr) {
  std::vector<bool> gt_used(num_gt, false), tp;
  for (const auto& row : iou) {
    double best = std::min(thr, 1 - 1e-10);
    int m = -1;
    for (size_t g = 0; g < num_gt; ++g) {
      if (gt_used[g] || row[g] < best) continue;
      best = row[g];
      m = int(g);
    }
    if (m >= 0) gt_used[size_t(m)] = true;
    tp.push_back(m >= 0);
  }
  return tp;
}

// COCOeval's accumulate for one category at one threshold: precision at 101 recall points.
double interpolated_ap(std::vector<std::pair<double, bool>> dets, int64_t num_gt) {
  std::stable_sort(dets.begin(), dets.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<double> rc, pr;
  double tps = 0, fps = 0;
  for (const auto& [score, tp] : dets) {
    tps += tp, fps += !tp;
    rc.push_back(tps / double(num_gt));
    pr.push_back(tps / (tps + fps));
  }
  for (size_t i = pr.size(); i-- > 1;) pr[i - 1] = std::max(pr[i - 1], pr[i]);
  double sum = 0;
  for (int r = 0; r <= 100; ++r) {
    const size_t i = size_t(std::lower_bound(rc.begin(), rc.end(), r / 100.0) - rc.begin());
    if (i < pr.size()) sum += pr[i];
  }
  return sum / 101;
}

}  // namespace

void add_ap_matches(const MaskVideo& pred, const MaskVideo& gt, ApPool& pool) {
  std::map<int, std::vector<int64_t>> gt_by_cat, pred_by_cat;
  for (const auto& [id, c] : gt.categories) gt_by_cat[c].push_back(id);
  for (const auto& [id, c] : pred.categories)
    if (pred.scores.count(id)) pred_by_cat[c].push_back(id);
  for (const auto& [cat, ids] : gt_by_cat) pool[cat];  // every category either side has
  for (const auto& [cat, ids] : pred_by_cat) pool[cat];
  for (auto& [cat, cm] : pool) {
    const std::vector<int64_t>& gts = gt_by_cat[cat];
    std::vector<int64_t> dts = pred_by_cat[cat];
    std::stable_sort(dts.begin(), dts.end(),
                     [&](int64_t a, int64_t b) { return pred.scores.at(a) > pred.scores.at(b); });
    if (dts.size() > 100) dts.resize(100);  // COCO's maxDets
    std::vector<std::vector<double>> iou;
    for (int64_t d : dts) {
      iou.emplace_back();
      for (int64_t g : gts) iou.back().push_back(masklet_iou(pred.objects.at(d), gt.objects.at(g)));
    }
    cm.num_gt += int64_t(gts.size());
    std::vector<std::vector<bool>> tp;
    for (int t = 0; t < kIouThresholds; ++t) tp.push_back(greedy_matches(iou, gts.size(), 0.5 + 0.05 * t));
    for (size_t k = 0; k < dts.size(); ++k) {
      std::vector<bool> flags;
      for (int t = 0; t < kIouThresholds; ++t) flags.push_back(tp[size_t(t)][k]);
      cm.dets.emplace_back(pred.scores.at(dts[k]), std::move(flags));
    }
  }
}

std::optional<MaskAp> ap_from_pool(const ApPool& pool) {
  MaskAp out;
  double sum = 0, sum50 = 0, sum75 = 0;
  for (const auto& [cat, cm] : pool) {
    if (cm.num_gt == 0) continue;  // COCOeval: -1, left out of the mean
    double cat_sum = 0;
    for (int t = 0; t < kIouThresholds; ++t) {
      std::vector<std::pair<double, bool>> dets;
      for (const auto& [score, flags] : cm.dets) dets.emplace_back(score, flags[size_t(t)]);
      const double ap_t = interpolated_ap(std::move(dets), cm.num_gt);
      cat_sum += ap_t;
      if (t == 0) sum50 += ap_t;
      if (t == 5) sum75 += ap_t;
    }
    sum += cat_sum / kIouThresholds;
    ++out.categories;
  }
  if (out.categories == 0) return std::nullopt;
  out.ap = sum / out.categories;
  out.ap50 = sum50 / out.categories;
  out.ap75 = sum75 / out.categories;
  return out;
}

std::optional<MaskAp> video_mask_ap(const MaskVideo& pred, const MaskVideo& gt) {
  if (gt.categories.empty() || pred.categories.empty() || pred.scores.empty()) return std::nullopt;
  ApPool pool;
  add_ap_matches(pred, gt, pool);
  return ap_from_pool(pool);
}

DatasetScores evaluate_videos(const std::vector<std::pair<int64_t, MaskVideo>>& pred,
                              const std::vector<std::pair<int64_t, MaskVideo>>& gt, const EvalOptions& opt) {
  DatasetScores out;
  ApPool pool;
  // AP applies when the predictions score and the ground truth has categories; a video the
  // predictions leave out still counts its ground truth.
  bool pred_scored = false, gt_categorised = false;
  for (const auto& [id, v] : pred) pred_scored = pred_scored || (!v.scores.empty() && !v.categories.empty());
  for (const auto& [id, v] : gt) gt_categorised = gt_categorised || !v.categories.empty();
  const bool ap_applies = pred_scored && gt_categorised;
  for (const auto& [id, g] : gt) {
    MaskVideo p;
    p.width = g.width, p.height = g.height;
    for (const auto& [pid, v] : pred)
      if (pid == id) p = v;
    if (g.objects.empty()) continue;  // nothing to judge on this video
    VideoScores vs = evaluate_video(p, g, opt);
    if (ap_applies) add_ap_matches(p, g, pool);
    for (const ObjectScore& o : vs.objects) {
      out.j.mean += o.j.mean, out.j.recall += o.j.recall, out.j.decay += o.j.decay;
      out.f.mean += o.f.mean, out.f.recall += o.f.recall, out.f.decay += o.f.decay;
      ++out.objects;
    }
    out.videos.emplace_back(id, std::move(vs));
  }
  SEGMUX_CHECK(out.objects > 0, "the ground truth has no objects in any video");
  for (SeriesStats* s : {&out.j, &out.f}) {
    s->mean /= out.objects, s->recall /= out.objects, s->decay /= out.objects;
  }
  out.jf = (out.j.mean + out.f.mean) / 2;
  if (ap_applies) out.ap = ap_from_pool(pool);
  return out;
}

nlohmann::json scores_json(const VideoScores& s) {
  auto stats = [](nlohmann::json& j, const char* m, const SeriesStats& v) {
    j[std::string(m) + "-Mean"] = v.mean;
    j[std::string(m) + "-Recall"] = v.recall;
    j[std::string(m) + "-Decay"] = v.decay;
  };
  nlohmann::json j = {{"J&F-Mean", s.jf}, {"frames", s.frames}};
  stats(j, "J", s.j);
  stats(j, "F", s.f);
  nlohmann::json objs = nlohmann::json::array();
  for (const ObjectScore& o : s.objects) {
    nlohmann::json e = {{"gt_id", o.gt_id}, {"J&F-Mean", (o.j.mean + o.f.mean) / 2}};
    e["pred_id"] = o.pred_id ? nlohmann::json(*o.pred_id) : nlohmann::json();
    stats(e, "J", o.j);
    stats(e, "F", o.f);
    objs.push_back(std::move(e));
  }
  j["objects"] = std::move(objs);
  j["unmatched_pred_ids"] = s.unmatched_pred;
  if (s.ap) {
    j["mAP"] = s.ap->ap;
    j["AP50"] = s.ap->ap50;
    j["AP75"] = s.ap->ap75;
    j["ap_categories"] = s.ap->categories;
  }
  return j;
}

}  // namespace segmux::pipeline
