// segmux fullsize-check: builds every SAM 3.1 deployment candidate at the FULL official configuration
// (random weights with the official keys), compiles it, creates the executor and runs it once on random
// inputs of the contract's shapes and dtypes. Reports per candidate the seconds of each stage, the peak
// resident memory and the arena size. Not part of CI: it writes a 3.4 GB checkpoint and takes minutes
// and ~10+ GB of memory (see scripts/fullsize_check.sh and docs/fullsize-check.md).
//
// Each candidate runs in a child process (fork), so its peak RSS (VmHWM) is its own and not the largest
// of everything that ran before it; a crash, an out-of-memory kill or a timeout in one candidate is
// reported and the others still run. The child streams one JSON line per finished stage through a pipe,
// so the stages that did finish are reported even when a later one dies.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "apps/child_process.h"
#include "apps/cli.h"
#include "apps/commands.h"
#include "compiler/compile.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"
#include "models/sam31/memory_encoder.h"
#include "models/sam31/state_dict.h"
#include "models/sam31/weights.h"
#include "runtime/executor.h"
#include "verify/sam31/random_checkpoint.h"
#include "verify/seeded_inputs.h"

namespace segmux::apps {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One field of /proc/self/status in KiB ("VmHWM", "VmRSS", "RssAnon", "RssFile"), -1 when absent.
long status_kib(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line, prefix = std::string(field) + ":";
  while (std::getline(f, line))
    if (line.rfind(prefix, 0) == 0) return std::stol(line.substr(prefix.size()));
  return -1;
}

double mib(long kib) { return kib < 0 ? -1.0 : kib / 1024.0; }

// What to check: a candidate name, optionally with a build variant ("memory_encoder:image_size_masks").
struct Target {
  std::string label;
  const sam31::Candidate* def = nullptr;
  std::string variant;
};

// One target per compiled file of a model folder (every candidate, plus the memory encoder variant).
std::vector<Target> default_targets() {
  std::vector<Target> out;
  for (const auto& f : sam31::compiled_files()) {
    const sam31::Candidate& c = sam31::candidate(f.candidate);
    out.push_back({f.variant.empty() ? c.name : c.name + ":" + f.variant, &c, f.variant});
  }
  return out;
}

Target parse_target(const std::string& spec) {
  std::string name = spec, variant;
  if (auto colon = spec.find(':'); colon != std::string::npos) {
    name = spec.substr(0, colon);
    variant = spec.substr(colon + 1);
  }
  const sam31::Candidate* c = sam31::find_candidate(name);
  SEGMUX_CHECK(c != nullptr, "--candidate '", spec, "': unknown candidate (known: ", sam31::candidate_names(),
               "; a variant is written NAME:VARIANT, e.g. memory_encoder:", sam31::kMemoryEncoderImageSizeVariant, ")");
  SEGMUX_CHECK(variant.empty() || std::find(c->variants.begin(), c->variants.end(), variant) != c->variants.end(),
               "--candidate '", spec, "': candidate '", name, "' has no build variant '", variant, "'");
  return {spec, c, variant};
}

// Sends one JSON line to the parent (whole line in one write: the pipe buffer holds it).
void send_line(int fd, const nlohmann::json& j) { write_all(fd, json_text(j) + "\n"); }

// The child: build -> compile -> executor -> run, reporting after every stage.
void check_in_child(const Target& t, const sam31::ModelConfig& cfg, const sam31::Weights& w, int threads, int runs,
                    uint64_t seed, int fd) {
  nlohmann::json r = {{"candidate", t.label}, {"stage", "start"}, {"hwm_start_mib", mib(status_kib("VmHWM"))}};
  send_line(fd, r);
  auto t0 = Clock::now();
  ir::Graph g = t.def->build(cfg, w, t.variant);
  r["build_s"] = seconds_since(t0);
  r["nodes_built"] = g.nodes.size();
  r["hwm_build_mib"] = mib(status_kib("VmHWM"));
  r["stage"] = "built";
  send_line(fd, r);

  t0 = Clock::now();
  compiler::CompileOptions opt;
  opt.command_line = "segmux fullsize-check (" + t.label + ")";
  compiler::CompileResult c = compiler::compile_graph(std::move(g), opt);
  r["compile_s"] = seconds_since(t0);
  r["nodes_compiled"] = c.graph.nodes.size();
  r["arena_bytes"] = c.plan.arena_bytes;
  r["hwm_compile_mib"] = mib(status_kib("VmHWM"));
  r["stage"] = "compiled";
  send_line(fd, r);

  t0 = Clock::now();
  ExecutorOptions eo;
  eo.num_threads = threads;
  Executor exec(std::move(c.graph), std::move(c.plan), eo);
  r["executor_s"] = seconds_since(t0);
  r["prepacked_bytes"] = exec.prepacked_bytes();
  r["hwm_executor_mib"] = mib(status_kib("VmHWM"));
  r["stage"] = "executor";
  send_line(fd, r);

  std::map<std::string, Tensor> inputs = verify::seeded_contract_inputs(exec.graph(), cfg, seed);
  nlohmann::json in_shapes = nlohmann::json::object();
  for (const auto& [name, tensor] : inputs) in_shapes[name] = shape_str(tensor.shape());
  r["inputs"] = in_shapes;
  t0 = Clock::now();
  std::map<std::string, Tensor> outputs = exec.run(inputs);
  r["run_s"] = seconds_since(t0);
  nlohmann::json out_shapes = nlohmann::json::object();
  size_t non_finite = 0;
  for (const auto& [name, tensor] : outputs) {
    out_shapes[name] = shape_str(tensor.shape());
    if (dtype_is_float(tensor.dtype()))
      for (int64_t i = 0; i < tensor.numel(); ++i)
        if (!std::isfinite(tensor.get_as_double(i))) ++non_finite;
  }
  r["outputs"] = out_shapes;
  r["non_finite_outputs"] = non_finite;
  r["hwm_run_mib"] = mib(status_kib("VmHWM"));
  // Further runs (--runs): steady-state time, and whether memory keeps growing after the first run.
  for (int i = 1; i < runs; ++i) {
    t0 = Clock::now();
    outputs = exec.run(inputs);
    r["later_run_s"].push_back(seconds_since(t0));
    r["later_hwm_mib"].push_back(mib(status_kib("VmHWM")));
    r["later_rss_anon_mib"].push_back(mib(status_kib("RssAnon")));
  }
  r["rss_anon_mib"] = mib(status_kib("RssAnon"));
  r["rss_file_mib"] = mib(status_kib("RssFile"));
  r["stage"] = "done";
  send_line(fd, r);
}

// Runs one target in a child process; returns the last report it sent, with "error" set on failure.
nlohmann::json check_target(const Target& t, const sam31::ModelConfig& cfg, const sam31::Weights& w, int threads,
                            int runs, uint64_t seed, int timeout_s) {
  const ChildOutcome child = run_in_child(
      [&](int report_fd) {
        try {
          check_in_child(t, cfg, w, threads, runs, seed, report_fd);
          return 0;
        } catch (const std::exception& e) {
          send_line(report_fd, {{"candidate", t.label}, {"stage", "error"}, {"error", e.what()}});
          return 1;
        }
      },
      timeout_s);
  const std::string& text = child.output;
  const int status = child.status;
  // Keep the last complete report; an "error" line carries only the message, so merge it in.
  nlohmann::json last = {{"candidate", t.label}, {"stage", "none"}};
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;
    auto j = nlohmann::json::parse(text.substr(pos, nl - pos), nullptr, false);
    if (!j.is_discarded()) {
      if (j.value("stage", "") == "error")
        last["error"] = j["error"];
      else
        last = j;
    }
    pos = nl + 1;
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    std::string why = sig == SIGALRM   ? "timed out after " + std::to_string(timeout_s) + " s"
                      : sig == SIGKILL ? "killed (SIGKILL: most likely out of memory)"
                                       : std::string("died of signal ") + strsignal(sig);
    last["error"] = why + " after stage '" + last.value("stage", "none") + "'";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !last.contains("error")) {
    last["error"] = "child exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return last;
}

std::string fmt_s(const nlohmann::json& r, const char* key) {
  if (!r.contains(key)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", r[key].get<double>());
  return b;
}
std::string fmt_mib(const nlohmann::json& r, const char* key) {
  if (!r.contains(key)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", r[key].get<double>());
  return b;
}

std::string markdown_table(const std::vector<nlohmann::json>& rows) {
  std::string s =
      "| candidate | build s | compile s | executor s | run s | peak RSS MiB after build / compile / executor / run "
      "| anon / file-backed RSS MiB at the end | arena MiB | prepacked MiB | outputs | status |\n"
      "|---|---:|---:|---:|---:|---|---|---:|---:|---|---|\n";
  for (const auto& r : rows) {
    std::string outs;
    if (r.contains("outputs"))
      for (auto& [k, v] : r["outputs"].items()) outs += (outs.empty() ? "" : "<br>") + k + " " + v.get<std::string>();
    char arena[32] = "-", packed[32] = "-";
    if (r.contains("arena_bytes"))
      std::snprintf(arena, sizeof arena, "%.0f", r["arena_bytes"].get<double>() / 1048576.0);
    if (r.contains("prepacked_bytes"))
      std::snprintf(packed, sizeof packed, "%.0f", r["prepacked_bytes"].get<double>() / 1048576.0);
    std::string status = r.contains("error") ? "FAILED: " + r["error"].get<std::string>() : "ok";
    if (!r.contains("error") && r.value("non_finite_outputs", 0) > 0)
      status = "ok, " + std::to_string(r["non_finite_outputs"].get<long>()) + " non-finite output values";
    for (auto& ch : status)
      if (ch == '|' || ch == '\n') ch = ' ';
    s += "| " + r.value("candidate", std::string("?")) + " | " + fmt_s(r, "build_s") + " | " + fmt_s(r, "compile_s") +
         " | " + fmt_s(r, "executor_s") + " | " + fmt_s(r, "run_s") + " | " + fmt_mib(r, "hwm_build_mib") + " / " +
         fmt_mib(r, "hwm_compile_mib") + " / " + fmt_mib(r, "hwm_executor_mib") + " / " + fmt_mib(r, "hwm_run_mib") +
         " | " + fmt_mib(r, "rss_anon_mib") + " / " + fmt_mib(r, "rss_file_mib") + " | " + arena + " | " + packed +
         " | " + outs + " | " + status + " |\n";
  }
  return s;
}

// Removes the temporary folder (and the checkpoint in it) on every way out, unless kept.
struct TempDir {
  std::string path;
  bool keep = false;
  ~TempDir() {
    if (path.empty() || keep) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

int fullsize_check_main(int argc, char** argv) {
  CLI::App app{
      "Build, compile and run once every SAM 3.1 candidate at the FULL official configuration with random "
      "weights (a random full-size .pt with the official 1,623 keys is written to a temporary folder, "
      "~3.4 GB, unless --checkpoint names one). Each candidate runs in its own child process; per "
      "candidate it prints build/compile/executor/run seconds, the peak resident memory after each "
      "stage, the arena size and the output shapes. Exit code 0 when every candidate ran. Takes "
      "minutes and ~10+ GB of memory: not part of CI.",
      "segmux fullsize-check"};
  std::string checkpoint, work_dir, markdown_out;
  bool keep = false, json = false;
  std::vector<std::string> names;
  int threads = 2, timeout_s = 0, runs = 1;
  uint64_t seed = 0;
  app.add_option("--checkpoint", checkpoint,
                 "full-size checkpoint to use; written there (and kept) when the file does not exist yet");
  app.add_flag("--keep", keep, "keep the temporary checkpoint (its path is printed)");
  app.add_option("--candidate", names,
                 "candidate to check, in the order given (repeatable; NAME or NAME:VARIANT); default: all, "
                 "plus memory_encoder:image_size_masks");
  app.add_flag("--json", json, "print the results as JSON instead of a markdown table");
  app.add_option("--markdown", markdown_out, "also write the markdown table to this file (atomically)");
  add_threads_option(app, threads, "executor threads");
  app.add_option("--timeout-s", timeout_s, "per-candidate time limit in seconds (0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--runs", runs, "run each candidate this many times (later runs: --json only)")
      ->check(CLI::Range(1, 100));
  app.add_option("--seed", seed, "seed of the random weights and inputs");
  app.add_option("--work-dir", work_dir, "where the temporary folder goes (default: $TMPDIR or /tmp)");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;

  std::vector<Target> targets;
  if (names.empty()) targets = default_targets();
  for (const auto& n : names) targets.push_back(parse_target(n));

  const sam31::ModelConfig cfg = sam31::default_config();
  TempDir tmp;
  tmp.keep = keep;
  if (checkpoint.empty() || !fs::exists(checkpoint)) {
    std::string target_path = checkpoint;
    if (target_path.empty()) {
      if (work_dir.empty()) work_dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
      std::string templ = work_dir + "/segmux-fullsize-XXXXXX";
      std::vector<char> buf(templ.begin(), templ.end());
      buf.push_back('\0');
      SEGMUX_CHECK(::mkdtemp(buf.data()) != nullptr, "cannot create a temporary folder in '", work_dir,
                   "': ", std::strerror(errno));
      tmp.path = buf.data();
      target_path = tmp.path + "/sam3.1_random_fullsize.pt";
    }
    std::fprintf(stderr, "writing a random full-size checkpoint to %s (~3.4 GB) ...\n", target_path.c_str());
    auto t0 = Clock::now();
    // Written beside its final name and renamed, so an interrupted run never leaves a truncated file
    // that a later --checkpoint run would reuse.
    std::string partial = target_path + ".partial." + std::to_string(::getpid());
    try {
      verify::write_random_checkpoint(partial, cfg, seed);
    } catch (...) {
      std::error_code ec;
      fs::remove(partial, ec);
      throw;
    }
    fs::rename(partial, target_path);
    std::fprintf(stderr, "  written in %.1f s\n", seconds_since(t0));
    checkpoint = target_path;
  } else {
    std::fprintf(stderr, "using the checkpoint %s\n", checkpoint.c_str());
  }
  if (keep && !tmp.path.empty()) std::fprintf(stderr, "keeping %s\n", checkpoint.c_str());

  auto t0 = Clock::now();
  sam31::Weights w = sam31::Weights::load(checkpoint);  // mmapped: pages are read when a child touches them
  sam31::check_weights(w, cfg);
  std::fprintf(stderr, "opened and checked %zu tensors in %.1f s (resident: %.0f MiB)\n", w.size(), seconds_since(t0),
               mib(status_kib("VmRSS")));

  std::vector<nlohmann::json> rows;
  bool all_ok = true;
  for (const auto& t : targets) {
    std::fprintf(stderr, "checking %s ...\n", t.label.c_str());
    nlohmann::json r = check_target(t, cfg, w, threads, runs, seed, timeout_s);
    if (r.contains("error")) {
      all_ok = false;
      std::fprintf(stderr, "  %s FAILED: %s\n", t.label.c_str(), r["error"].get<std::string>().c_str());
    } else {
      std::fprintf(stderr, "  %s: build %s s, compile %s s, executor %s s, run %s s, peak %s MiB\n", t.label.c_str(),
                   fmt_s(r, "build_s").c_str(), fmt_s(r, "compile_s").c_str(), fmt_s(r, "executor_s").c_str(),
                   fmt_s(r, "run_s").c_str(), fmt_mib(r, "hwm_run_mib").c_str());
    }
    rows.push_back(std::move(r));
    // Rewritten after every candidate, so an outer time limit still leaves the rows that finished.
    if (!markdown_out.empty()) {
      const std::string partial_table = markdown_table(rows);
      write_file_atomic(markdown_out, partial_table.data(), partial_table.size());
    }
  }

  const std::string table = markdown_table(rows);
  if (json) {
    nlohmann::json j = {{"config", cfg.name}, {"threads", threads}, {"checkpoint", checkpoint}, {"candidates", rows}};
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    std::printf("%s", table.c_str());
  }
  return all_ok ? 0 : 1;
}

CommandRegistration fullsize_check_registration(
    "fullsize-check", "build, compile and run every candidate once at full size (random weights; not CI)",
    fullsize_check_main);

}  // namespace

}  // namespace segmux::apps
