#include "verify/package_verify.h"

#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "deploy/package/package.h"
#include "io/child_process.h"
#include "models/sam31/candidates.h"
#include "onnx/onnx_io.h"
#include "runtime/executor.h"
#include "runtime/interpreter.h"
#include "runtime/offline_model.h"
#include "verify/ort_peer.h"

namespace segmux::verify {

namespace fs = std::filesystem;

namespace {

std::string fmt(double v, int precision = 3) {
  std::ostringstream s;
  s << std::setprecision(precision) << v;
  return s.str();
}

// The folders holding .smx variants: the root ("") and compiled/<precision>-<isa>/, sorted.
std::vector<std::string> smx_variants(const std::string& dir) {
  std::vector<std::string> out;
  if (fs::is_directory(dir + "/compiled"))
    for (const auto& e : fs::directory_iterator(dir + "/compiled"))
      if (e.is_directory() && !e.is_symlink()) out.push_back("compiled/" + e.path().filename().string());
  std::sort(out.begin(), out.end());
  out.insert(out.begin(), "");
  return out;
}

void compare_all(PackageVerification& rep, const std::string& file, const std::string& engine, const std::string& path,
                 const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& ref,
                 const std::string& tiers) {
  CompareOptions co;
  co.tier_precision = tiers;
  for (const auto& [name, r] : ref) {
    PackageVerifyRow row{file, engine, path, name, {}, 0.0, Verdict::pass};
    auto it = got.find(name);
    if (it == got.end())
      row.c.contract_error = "output missing";
    else
      row.c = compare_tensors(it->second, r, co);
    if (!row.c.contract_error.empty()) row.c.verdict = Verdict::fail;
    for (int64_t i = 0; i < r.numel(); ++i) {
      const double a = std::fabs(r.get_as_double(i));
      if (std::isfinite(a)) row.max_ref = std::max(row.max_ref, a);
    }
    row.gate = verdict_for_package(row.c);
    rep.rows.push_back(std::move(row));
  }
}

}  // namespace

Verdict verdict_for_package(const Comparison& c) {
  if (!c.contract_error.empty() || c.nonfinite_mismatch > 0 || c.cosine_tier == Verdict::fail) return Verdict::fail;
  if (c.max_abs_tier == Verdict::fail) return Verdict::review;
  return c.verdict;
}

Verdict PackageVerification::verdict() const {
  Verdict v = errors.empty() ? Verdict::pass : Verdict::fail;
  for (const auto& r : rows) v = worse(v, r.gate);
  return v;
}

namespace {

// What the per-file work needs from the whole run, decided once (by the parent when files run in
// child processes, which get it on their command line).
struct FileJob {
  sam31::ModelConfig cfg;
  std::vector<std::string> vars;  // .smx folders
  bool ort = false;               // ONNX Runtime runs (resolved: available and not disabled)
};

// Verifies one compiled file into `rep` (rows, notes, errors); never throws for the file's own faults.
void verify_one_file(const std::string& dir, const sam31::CompiledFile& f, uint64_t file_seed, const FileJob& job,
                     const PackageVerifyOptions& opt, PackageVerification& rep, std::ostream* log) {
  const bool ort_reference = opt.reference == "onnxruntime";
  const std::string onnx = "onnx/" + f.file + ".onnx";
  if (log) *log << "verifying " << f.file << " ..." << std::endl;
  try {
    // One model in memory at a time (a full-size backbone is 2 GB of weights): the imported graph is
    // freed before ONNX Runtime or a .smx loads.
    std::map<std::string, Tensor> inputs, ref;
    {
      ir::Graph g = onnx_io::import_onnx_file(dir + "/" + onnx);
      inputs = seeded_contract_inputs(g, job.cfg, file_seed);
      if (!ort_reference) {
        InterpreterOptions so;
        so.num_threads = opt.num_threads;
        so.use_optimized_kernels = false;
        ref = Interpreter(std::move(g), so).run(inputs);
      }
    }
    if (ort_reference) {
      OrtPeerOptions oo;
      oo.num_threads = opt.num_threads;
      ref = OrtPeer(dir + "/" + onnx, oo).run(inputs);
    }
    for (const std::string& sub : job.vars) {
      const std::string rel = (sub.empty() ? "" : sub + "/") + f.file + ".smx";
      try {
        OfflineModel m = load_offline_model_file(dir + "/" + rel, LoadOptions{true, false});
        const std::string isa = m.target_isa;
        if (!host_supports_isa(isa)) {
          rep.notes.push_back(rel + " targets " + isa + ", which this machine lacks: not run here");
          continue;
        }
        ExecutorOptions eo;
        eo.num_threads = opt.num_threads;
        Executor exec(m.graph, m.plan, eo);
        const nlohmann::json meta = nlohmann::json::parse(m.meta_json, nullptr, false);
        const std::string precision = meta.is_object() ? meta.value("precision", "fp32") : "fp32";
        compare_all(rep, f.file, "segmux " + precision + " " + isa, rel, exec.run(inputs), ref,
                    precision == "bf16" ? "fp16" : "auto");
      } catch (const std::exception& e) {
        rep.errors.push_back(rel + ": " + e.what());
      }
    }
    if (job.ort) {
      for (const std::string& rel : {onnx, "onnx/" + f.file + ".slim.onnx"}) {
        if (ort_reference && rel == onnx) continue;  // the reference itself
        try {
          OrtPeerOptions oo;
          oo.num_threads = opt.num_threads;
          OrtPeer peer(dir + "/" + rel, oo);
          compare_all(rep, f.file, rel == onnx ? "onnxruntime" : "onnxruntime slim", rel, peer.run(inputs), ref,
                      "auto");
        } catch (const std::exception& e) {
          rep.errors.push_back(rel + ": " + e.what());
        }
      }
    }
  } catch (const std::exception& e) {
    rep.errors.push_back(onnx + ": " + e.what());
  }
}

const sam31::CompiledFile& compiled_file_named(const std::string& file) {
  for (const sam31::CompiledFile& f : sam31::compiled_files())
    if (f.file == file) return f;
  fail("'", file, "' is not a compiled file of the model");
}

// The inputs of every file are a function of the run's seed and the file's place in the list.
uint64_t file_seed_of(const PackageVerifyOptions& opt, const std::string& file) {
  uint64_t s = opt.seed;
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    ++s;
    if (f.file == file) return s;
  }
  fail("'", file, "' is not a compiled file of the model");
}

FileJob make_job(const std::string& dir, bool ort) {
  FileJob job;
  std::string vocab;
  package::read_model_json(dir, job.cfg, vocab);
  job.vars = smx_variants(dir);
  job.ort = ort;
  return job;
}

// Injected faults, for tests only: SEGMUX_TEST_VERIFY_CHILD_FAULT=<file>:<crash|kill|exit|fail> makes
// the child process verifying <file> die of SIGSEGV, be killed by SIGKILL (as the OOM killer does),
// exit 3 without a report, or fail with an error.
void inject_test_fault(const std::string& file) {
  const char* spec = std::getenv("SEGMUX_TEST_VERIFY_CHILD_FAULT");
  if (!spec) return;
  const std::string s = spec;
  const size_t colon = s.find(':');
  if (colon == std::string::npos || s.substr(0, colon) != file) return;
  const std::string what = s.substr(colon + 1);
  if (what == "crash") ::raise(SIGSEGV);
  if (what == "kill") ::raise(SIGKILL);
  if (what == "exit") ::_exit(3);
  if (what == "fail") fail("injected failure (SEGMUX_TEST_VERIFY_CHILD_FAULT)");
}

// Runs one file's verification in a child process (opt.child_exe re-executed) and merges its report.
void verify_file_in_child(const std::string& dir, const std::string& file, bool ort, const PackageVerifyOptions& opt,
                          PackageVerification& rep) {
  // name=value forms and "--" before the folder: a folder or file named "-pkg" must not read as an option.
  std::vector<std::string> argv = {opt.child_exe,
                                   "verify-package",
                                   "--child-file=" + file,
                                   "--seed=" + std::to_string(opt.seed),
                                   "--reference=" + opt.reference,
                                   "--threads=" + std::to_string(opt.num_threads)};
  if (!ort) argv.push_back("--no-ort");
  argv.push_back("--");
  argv.push_back(dir);
  std::string why;
  try {
    const ChildResult r = run_child(argv);
    const nlohmann::json j = nlohmann::json::parse(r.report, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) {
      why = j["error"].get<std::string>();
    } else if (r.ok() && j.is_object()) {
      PackageVerification part = PackageVerification::from_wire(j);
      for (auto& row : part.rows) rep.rows.push_back(std::move(row));
      for (auto& n : part.notes) rep.notes.push_back(std::move(n));
      for (auto& e : part.errors) rep.errors.push_back(std::move(e));
      return;
    } else {
      why = "its process " + r.describe() + (r.ok() ? " with an unreadable report" : " before reporting");
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  rep.errors.push_back(file + ": verification in a child process failed: " + why);
}

}  // namespace

PackageVerification verify_package_models(const std::string& dir, const PackageVerifyOptions& opt, std::ostream* log) {
  const auto t0 = std::chrono::steady_clock::now();
  PackageVerification rep;
  rep.seed = opt.seed;
  std::string why;
  const bool ort = opt.onnxruntime && ort_available(&why);
  if (!ort) rep.notes.push_back("ONNX Runtime not run: " + (opt.onnxruntime ? why : "disabled"));
  SEGMUX_CHECK(opt.reference == "kernels" || opt.reference == "onnxruntime", "unknown verification reference '",
               opt.reference, "' (known: kernels, onnxruntime)");
  const bool ort_reference = opt.reference == "onnxruntime";
  SEGMUX_CHECK(!ort_reference || ort, "the verification reference is ONNX Runtime, which is not available: ", why);
  rep.reference = ort_reference ? "ONNX Runtime on onnx/<file>.onnx" : "segmux reference kernels on onnx/<file>.onnx";
  const FileJob job = make_job(dir, ort);  // model.json read (and checked) in any case
  if (!fs::is_directory(dir + "/onnx")) {
    rep.notes.push_back("no onnx/ folder (a model-cache entry or a runtime-only folder): nothing to compare with");
    return rep;
  }
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    if (!opt.child_exe.empty()) {
      verify_file_in_child(dir, f.file, ort, opt, rep);
      continue;
    }
    verify_one_file(dir, f, file_seed_of(opt, f.file), job, opt, rep, log);
    // Hand the freed heap of this file's models back (glibc keeps it per thread arena otherwise); the
    // full-size run reached 11 GiB resident at the propagation decoder (docs/deploy-fullsize.md).
    ::malloc_trim(0);
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

int verify_package_file_child(const std::string& dir, const std::string& file, const PackageVerifyOptions& opt) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent that is stopped takes its child along
  nlohmann::json report;
  int rc = 0;
  try {
    inject_test_fault(file);
    PackageVerification rep;
    rep.seed = opt.seed;
    verify_one_file(dir, compiled_file_named(file), file_seed_of(opt, file), make_job(dir, opt.onnxruntime), opt, rep,
                    &std::cerr);
    report = rep.to_wire();
  } catch (const std::exception& e) {
    report = {{"error", e.what()}};
    rc = 1;
  }
  const std::string text = report.dump();
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(kChildReportFd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1;
    done += size_t(n);
  }
  return rc;
}

namespace {

nlohmann::json num(double v) {  // JSON has no NaN/Inf: those travel as strings
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}
double num_of(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::nan("");
  return s == "inf" ? HUGE_VAL : -HUGE_VAL;
}
Verdict verdict_of(const nlohmann::json& j) { return Verdict(std::clamp(j.get<int>(), 0, 2)); }

}  // namespace

nlohmann::json PackageVerification::to_wire() const {
  nlohmann::json rows_j = nlohmann::json::array();
  for (const auto& r : rows)
    rows_j.push_back({{"file", r.file},
                      {"engine", r.engine},
                      {"path", r.path},
                      {"output", r.output},
                      {"contract_error", r.c.contract_error},
                      {"elements", r.c.elements},
                      {"cosine", num(r.c.cosine)},
                      {"max_abs", num(r.c.max_abs)},
                      {"mean_abs", num(r.c.mean_abs)},
                      {"max_rel", num(r.c.max_rel)},
                      {"outlier_ratio", num(r.c.outlier_ratio)},
                      {"allclose", r.c.allclose},
                      {"nonfinite_mismatch", r.c.nonfinite_mismatch},
                      {"cosine_tier", int(r.c.cosine_tier)},
                      {"max_abs_tier", int(r.c.max_abs_tier)},
                      {"verdict", int(r.c.verdict)},
                      {"max_ref", num(r.max_ref)},
                      {"gate", int(r.gate)}});
  return {{"rows", rows_j}, {"notes", notes}, {"errors", errors}};
}

PackageVerification PackageVerification::from_wire(const nlohmann::json& j) {
  PackageVerification v;
  try {
    for (const auto& r : j.at("rows")) {
      PackageVerifyRow row;
      row.file = r.at("file");
      row.engine = r.at("engine");
      row.path = r.at("path");
      row.output = r.at("output");
      row.c.contract_error = r.at("contract_error");
      row.c.elements = r.at("elements");
      row.c.cosine = num_of(r.at("cosine"));
      row.c.max_abs = num_of(r.at("max_abs"));
      row.c.mean_abs = num_of(r.at("mean_abs"));
      row.c.max_rel = num_of(r.at("max_rel"));
      row.c.outlier_ratio = num_of(r.at("outlier_ratio"));
      row.c.allclose = r.at("allclose");
      row.c.nonfinite_mismatch = r.at("nonfinite_mismatch");
      row.c.cosine_tier = verdict_of(r.at("cosine_tier"));
      row.c.max_abs_tier = verdict_of(r.at("max_abs_tier"));
      row.c.verdict = verdict_of(r.at("verdict"));
      row.max_ref = num_of(r.at("max_ref"));
      row.gate = verdict_of(r.at("gate"));
      v.rows.push_back(std::move(row));
    }
    v.notes = j.at("notes").get<std::vector<std::string>>();
    v.errors = j.at("errors").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    fail("a verification report from a child process is malformed: ", e.what());
  }
  return v;
}

nlohmann::json PackageVerification::to_json() const {
  nlohmann::json rows_j = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = {{"file", r.file},
                        {"engine", r.engine},
                        {"path", r.path},
                        {"output", r.output},
                        {"verdict", std::string(verdict_name(r.gate))},
                        {"tiers_verdict", std::string(verdict_name(r.c.verdict))}};
    if (!r.c.contract_error.empty()) {
      j["contract_error"] = r.c.contract_error;
    } else {
      j["cosine"] = r.c.cosine;
      j["max_abs"] = r.c.max_abs;
      j["max_abs_ref"] = r.max_ref;
      j["mean_abs"] = r.c.mean_abs;
      j["max_rel"] = r.c.max_rel;
      j["allclose"] = r.c.allclose;
      j["outlier_ratio"] = r.c.outlier_ratio;
      j["cosine_tier"] = std::string(verdict_name(r.c.cosine_tier));
      j["max_abs_tier"] = std::string(verdict_name(r.c.max_abs_tier));
    }
    rows_j.push_back(std::move(j));
  }
  return {{"format", "segmux-verification-1"},
          {"reference", reference},
          {"seed", seed},
          {"verdict", std::string(verdict_name(verdict()))},
          {"rows", rows_j},
          {"notes", notes},
          {"errors", errors}};
}

std::string PackageVerification::to_markdown() const {
  std::ostringstream md;
  md << "# Verification\n\nEvery compiled file on seeded inputs of its contract (seed " << seed
     << "), compared with the reference: " << reference
     << ". Tiers (segmux docs/deploy.md): "
        "cosine >= 0.9999 pass, >= 0.999 review; max abs < 1e-4 pass, < 1e-3 review (fp32); < 1e-2, < 5e-2 "
        "(bf16 and bf16 outputs). Integer outputs must match exactly. A row fails on a contract error, a NaN/Inf "
        "mismatch or a cosine fail; a max-abs fail alone is `review` (the absolute tiers do not scale with the "
        "output: see max abs / max|ref|; judged end to end).\n\n**Verdict: "
     << verdict_name(verdict())
     << "**\n\n| file | engine | output | cosine | max abs | max abs / max\\|ref\\| | cosine tier | max-abs tier | "
        "verdict |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& r : rows) {
    md << "| " << r.file << " | " << r.engine << " | " << r.output << " | ";
    if (!r.c.contract_error.empty())
      md << r.c.contract_error << " | | | | | fail |\n";
    else
      md << std::fixed << std::setprecision(8) << r.c.cosine << std::defaultfloat << " | " << fmt(r.c.max_abs) << " | "
         << fmt(r.max_ref > 0 ? r.c.max_abs / r.max_ref : r.c.max_abs) << " | " << verdict_name(r.c.cosine_tier)
         << " | " << verdict_name(r.c.max_abs_tier) << " | " << verdict_name(r.gate) << " |\n";
  }
  for (const auto& n : notes) md << "\nNote: " << n << "\n";
  for (const auto& e : errors) md << "\nERROR: " << e << "\n";
  return md.str();
}

}  // namespace segmux::verify
