#include "verify/package_verify.h"

#include <malloc.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <random>
#include <sstream>

#include "core/error.h"
#include "models/sam31/candidates.h"
#include "onnx/onnx_io.h"
#include "pipeline/package/package.h"
#include "runtime/executor.h"
#include "runtime/offline_model.h"
#include "runtime/session.h"
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

PackageVerification verify_package_models(const std::string& dir, const PackageVerifyOptions& opt, std::ostream* log) {
  const auto t0 = std::chrono::steady_clock::now();
  PackageVerification rep;
  rep.seed = opt.seed;
  sam31::ModelConfig cfg;
  std::string vocab;
  package::read_model_json(dir, cfg, vocab);
  std::string why;
  const bool ort = opt.onnxruntime && ort_available(&why);
  if (!ort) rep.notes.push_back("ONNX Runtime not run: " + (opt.onnxruntime ? why : "disabled"));
  SEGMUX_CHECK(opt.reference == "kernels" || opt.reference == "onnxruntime", "unknown verification reference '",
               opt.reference, "' (known: kernels, onnxruntime)");
  const bool ort_reference = opt.reference == "onnxruntime";
  SEGMUX_CHECK(!ort_reference || ort, "the verification reference is ONNX Runtime, which is not available: ", why);
  rep.reference = ort_reference ? "ONNX Runtime on onnx/<file>.onnx" : "segmux reference kernels on onnx/<file>.onnx";
  if (!fs::is_directory(dir + "/onnx")) {
    rep.notes.push_back("no onnx/ folder (a model-cache entry or a runtime-only folder): nothing to compare with");
    return rep;
  }
  const std::vector<std::string> vars = smx_variants(dir);
  uint64_t file_seed = opt.seed;
  for (const sam31::CompiledFile& f : sam31::compiled_files()) {
    ++file_seed;
    const std::string onnx = "onnx/" + f.file + ".onnx";
    if (log) *log << "verifying " << f.file << " ..." << std::endl;
    try {
      // One model in memory at a time (a full-size backbone is 2 GB of weights): the imported graph is
      // freed before ONNX Runtime or a .smx loads.
      std::map<std::string, Tensor> inputs, ref;
      {
        ir::Graph g = onnx_io::import_onnx_file(dir + "/" + onnx);
        inputs = seeded_contract_inputs(g, cfg, file_seed);
        if (!ort_reference) {
          SessionOptions so;
          so.num_threads = opt.num_threads;
          so.use_optimized_kernels = false;
          ref = Session(std::move(g), so).run(inputs);
        }
      }
      if (ort_reference) {
        OrtPeerOptions oo;
        oo.num_threads = opt.num_threads;
        ref = OrtPeer(dir + "/" + onnx, oo).run(inputs);
      }
      for (const std::string& sub : vars) {
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
      if (ort) {
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
    // Hand the freed heap of this file's models back (glibc keeps it per thread arena otherwise); the
    // full-size run reached 11 GiB resident at the propagation decoder (docs/deploy-fullsize.md).
    ::malloc_trim(0);
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
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
     << ". Tiers (docs/deployment-route.md): "
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
