#include "runtime/profiler.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "io/files.h"
#include "ir/strided_view.h"

namespace segmux {

namespace {

using json = nlohmann::json;

double us_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// VmRSS from /proc/self/statm (resident pages), 0 when unavailable.
size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return got == 2 ? size_t(resident) * size_t(::sysconf(_SC_PAGESIZE)) : 0;
}

const Tensor* in_at(const std::vector<const Tensor*>& in, size_t k) {
  return k < in.size() && in[k] && in[k]->defined() ? in[k] : nullptr;
}

}  // namespace

double estimate_flops(const ir::Node& node, const std::vector<const Tensor*>& inputs,
                      const std::vector<Tensor*>& outputs) {
  const Tensor* a = in_at(inputs, 0);
  const Tensor* w = in_at(inputs, 1);
  const Tensor* y = !outputs.empty() && outputs[0] && outputs[0]->defined() ? outputs[0] : nullptr;
  if (!a || !y) return 0;
  const double out = double(y->numel());
  const std::string& op = node.op_type;
  if (node.domain.empty()) {
    if (op == "MatMul" && a->rank() >= 1) return 2.0 * out * double(a->dim(-1));
    if (op == "Gemm" && a->rank() == 2) return 2.0 * out * double(a->dim(node.attr_int("transA", 0) ? 0 : 1));
    if ((op == "Conv" || op == "ConvTranspose") && w && w->rank() >= 3 && w->dim(0) > 0) {
      const double per_row = double(w->numel()) / double(w->dim(0));  // multiply-adds per output (input) value
      return 2.0 * (op == "Conv" ? out : double(a->numel())) * per_row;
    }
    return 0;
  }
  if (node.domain == "segmux") {
    if (op == "Linear" && w && w->rank() == 2) return 2.0 * out * double(w->dim(0));
    if (op == "Conv" && w && w->rank() >= 3 && w->dim(0) > 0) return 2.0 * out * double(w->numel()) / double(w->dim(0));
    if (op == "Attention" && w) {
      // q, k, v as the node reads them (strided views, ir/strided_view.h, have shapes of their own).
      const Shape qs = ir::read_shape(node, 0, a->shape()), ks = ir::read_shape(node, 1, w->shape());
      if (qs.size() < 2 || ks.size() != qs.size()) return 0;
      const Tensor* v = in_at(inputs, 2);
      const double lq = double(qs[qs.size() - 2]), d = double(qs.back()), lk = double(ks[ks.size() - 2]);
      const double dv = v ? double(ir::read_shape(node, 2, v->shape()).back()) : d;
      const double batch = lq * d > 0 ? double(shape_numel(qs)) / (lq * d) : 0;
      return 2.0 * batch * lq * lk * (d + dv);  // q k^T and p v
    }
  }
  return 0;
}

ExecutorProfiler::ExecutorProfiler(Executor& executor)
    : executor_(executor), origin_(std::chrono::steady_clock::now()) {
  executor_.set_node_observer([this](const NodeRun& r) {
    if (!recording_) return;
    ProfileEvent e;
    e.run = int(run_bounds_.size()) - 1;
    e.node = r.index;
    e.ts_us = us_between(origin_, r.start);
    e.dur_us = us_between(r.start, r.end);
    e.flops = estimate_flops(r.node, r.inputs, r.outputs);
    e.rss_bytes = resident_bytes();
    for (const Tensor* t : r.inputs) e.input_shapes.push_back(t && t->defined() ? t->shape() : Shape{});
    for (const Tensor* t : r.outputs) e.output_shapes.push_back(t && t->defined() ? t->shape() : Shape{});
    events_.push_back(std::move(e));
  });
}

ExecutorProfiler::~ExecutorProfiler() { executor_.set_node_observer(nullptr); }

void ExecutorProfiler::begin_run() {
  recording_ = true;
  const double now = us_between(origin_, std::chrono::steady_clock::now());
  run_bounds_.push_back({now, now});
}

void ExecutorProfiler::end_run() {
  SEGMUX_CHECK(recording_, "profiler: end_run() without begin_run()");
  recording_ = false;
  run_bounds_.back().second = us_between(origin_, std::chrono::steady_clock::now());
}

double ExecutorProfiler::run_seconds(int run) const {
  auto& b = run_bounds_.at(size_t(run));
  return (b.second - b.first) * 1e-6;
}

double ExecutorProfiler::mean_run_seconds() const {
  double s = 0;
  for (int r = 0; r < runs(); ++r) s += run_seconds(r);
  return runs() ? s / runs() : 0;
}

std::string ExecutorProfiler::op_key(size_t node) const {
  const ir::Node& n = executor_.graph().nodes[node];
  return n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
}

std::string ExecutorProfiler::chrome_trace_json() const {
  json events = json::array();
  auto shapes = [](const std::vector<Shape>& v) {
    json a = json::array();
    for (const Shape& s : v) a.push_back(s);
    return a;
  };
  for (int r = 0; r < runs(); ++r) {
    auto& b = run_bounds_[size_t(r)];
    events.push_back({{"name", "run " + std::to_string(r)},
                      {"cat", "run"},
                      {"ph", "X"},
                      {"ts", b.first},
                      {"dur", b.second - b.first},
                      {"pid", 1},
                      {"tid", 1},
                      {"args", {{"run", r}}}});
  }
  for (const ProfileEvent& e : events_) {
    const ir::Node& n = executor_.graph().nodes[e.node];
    json args = {{"op_type", op_key(e.node)},
                 {"node_index", e.node},
                 {"run", e.run},
                 {"input_shapes", shapes(e.input_shapes)},
                 {"output_shapes", shapes(e.output_shapes)},
                 {"rss_mib", double(e.rss_bytes) / double(1 << 20)}};
    if (e.flops > 0) {
      args["gflop"] = e.flops * 1e-9;
      args["gflop_per_s"] = e.dur_us > 0 ? e.flops / e.dur_us * 1e-3 : 0.0;
    }
    if (e.rss_bytes)
      events.push_back({{"name", "RSS MiB"},
                        {"ph", "C"},
                        {"ts", e.ts_us + e.dur_us},
                        {"pid", 1},
                        {"args", {{"rss", double(e.rss_bytes) / double(1 << 20)}}}});
    events.push_back({{"name", n.name.empty() ? op_key(e.node) + "_" + std::to_string(e.node) : n.name},
                      {"cat", op_key(e.node)},
                      {"ph", "X"},
                      {"ts", e.ts_us},
                      {"dur", e.dur_us},
                      {"pid", 1},
                      {"tid", 1},
                      {"args", std::move(args)}});
  }
  json j = {{"traceEvents", std::move(events)},
            {"displayTimeUnit", "ms"},
            {"otherData", {{"producer", "segmux bench --profile"}, {"runs", runs()}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void ExecutorProfiler::write_chrome_trace(const std::string& path) const {
  const std::string text = chrome_trace_json();
  write_file_atomic(path, text.data(), text.size());
}

namespace {

std::vector<ProfileRow> finish_rows(std::map<std::string, ProfileRow>& rows, int runs) {
  std::vector<ProfileRow> out;
  double total = 0;
  for (auto& [k, r] : rows) total += r.seconds;
  for (auto& [k, r] : rows) {
    r.share = total > 0 ? r.seconds / total : 0;
    if (runs > 0) {
      r.seconds /= runs;
      r.flops /= runs;
      r.calls /= runs;
    }
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace

std::vector<ProfileRow> ExecutorProfiler::by_op_type() const {
  std::map<std::string, ProfileRow> rows;
  for (const ProfileEvent& e : events_) {
    ProfileRow& r = rows[op_key(e.node)];
    r.key = r.op_type = op_key(e.node);
    r.calls += 1;
    r.seconds += e.dur_us * 1e-6;
    r.flops += e.flops;
  }
  return finish_rows(rows, runs());
}

std::vector<ProfileRow> ExecutorProfiler::by_node(size_t top) const {
  std::map<std::string, ProfileRow> rows;
  for (const ProfileEvent& e : events_) {
    // Keyed by index: node names need not be unique.
    char key[32];
    std::snprintf(key, sizeof key, "%012zu", e.node);
    ProfileRow& r = rows[key];
    const std::string& name = executor_.graph().nodes[e.node].name;
    r.key = name.empty() ? op_key(e.node) + "_" + std::to_string(e.node) : name;
    r.op_type = op_key(e.node);
    r.calls += 1;
    r.seconds += e.dur_us * 1e-6;
    r.flops += e.flops;
  }
  auto out = finish_rows(rows, runs());
  if (out.size() > top) out.resize(top);
  return out;
}

std::string ExecutorProfiler::summary_text(size_t top) const {
  std::string s;
  char line[512];
  auto gflops = [](const ProfileRow& r) {
    char b[32];
    if (r.flops > 0)
      std::snprintf(b, sizeof b, "%9.1f", r.gflops_per_s());
    else
      std::snprintf(b, sizeof b, "%9s", "-");
    return std::string(b);
  };
  double nodes_s = 0;
  for (auto& r : by_op_type()) nodes_s += r.seconds;
  std::snprintf(line, sizeof line, "  profile: %d run(s), %.3f s per run, of which %.3f s in kernels\n", runs(),
                mean_run_seconds(), nodes_s);
  s += line;
  s += "  op type                        calls   ms/run   share    GFLOP  GFLOP/s\n";
  auto ops = by_op_type();
  for (size_t i = 0; i < ops.size() && i < top; ++i) {
    const ProfileRow& r = ops[i];
    std::snprintf(line, sizeof line, "  %-28.28s %7lld %8.2f %6.1f%% %8.3f %s\n", r.key.c_str(), (long long)r.calls,
                  r.seconds * 1e3, r.share * 100, r.flops * 1e-9, gflops(r).c_str());
    s += line;
  }
  s += "  node                                     op type                ms/run   share  GFLOP/s\n";
  for (const ProfileRow& r : by_node(top)) {
    std::snprintf(line, sizeof line, "  %-40.40s %-20.20s %8.2f %6.1f%% %s\n", r.key.c_str(), r.op_type.c_str(),
                  r.seconds * 1e3, r.share * 100, gflops(r).c_str());
    s += line;
  }
  return s;
}

}  // namespace segmux
