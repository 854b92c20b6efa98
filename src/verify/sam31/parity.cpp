#include "verify/sam31/parity.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "compiler/compile.h"
#include "core/tensor_ops.h"
#include "io/json_limits.h"
#include "models/sam31/config.h"
#include "models/sam31/tokenizer.h"
#include "models/sam31/weights.h"
#include "onnx/onnx_io.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/interpreter.h"
#include "verify/ort_peer.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::verify {

using namespace segmux::sam31;

namespace fs = std::filesystem;

OutputCheck check_output(const Tensor& got, const Tensor& ref, const Tolerance& tol) {
  OutputCheck c;
  if (got.shape() != ref.shape()) {
    c.shape_ok = false;
    c.pass = false;
    c.problem = "shape " + shape_str(got.shape()) + " != reference " + shape_str(ref.shape());
    return c;
  }
  if ((got.dtype() == DType::boolean) != (ref.dtype() == DType::boolean)) {
    c.pass = false;
    c.problem =
        "dtype " + std::string(dtype_name(got.dtype())) + " != reference " + std::string(dtype_name(ref.dtype()));
    return c;
  }
  double dot = 0, na = 0, nb = 0;
  int64_t inter = 0, uni = 0;
  bool nonfinite = false;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double a = got.get_as_double(i), r = ref.get_as_double(i);
    if (!std::isfinite(a) || !std::isfinite(r)) {
      if (!(std::isnan(a) && std::isnan(r)) && a != r) nonfinite = true;
      continue;
    }
    dot += a * r, na += a * a, nb += r * r;
    c.max_abs = std::max(c.max_abs, std::fabs(a - r));
    c.max_ref = std::max(c.max_ref, std::fabs(r));
    const bool ma = a > 0, mr = r > 0;
    inter += ma && mr;
    uni += ma || mr;
  }
  if (na == 0 && nb == 0)
    c.cosine = 1.0;
  else if (na == 0 || nb == 0)
    c.cosine = 0.0;
  else
    c.cosine = dot / (std::sqrt(na) * std::sqrt(nb));
  const double scale = tol.scale_is_max_ref ? c.max_ref : std::max(1.0, c.max_ref);
  c.ratio = scale > 0 ? c.max_abs / scale : (c.max_abs > 0 ? INFINITY : 0.0);
  c.pass = c.cosine >= tol.min_cosine && c.max_abs <= tol.max_abs_over_scale * scale;
  if (tol.check_mask_iou) {
    c.iou_checked = true;
    c.mask_iou = uni == 0 ? 1.0 : double(inter) / double(uni);
    c.pass = c.pass && c.mask_iou >= tol.min_mask_iou;
  }
  if (nonfinite) {
    c.pass = false;
    c.problem = "non-finite values differ";
  }
  return c;
}

bool ParityReport::passed() const {
  if (!failures.empty()) return false;
  for (auto& r : rows)
    if (!r.check.pass) return false;
  return !rows.empty();
}

namespace {

void check_case(ParityReport& rep, const std::string& weights_name, const Candidate& cand, const ParityCase& pc,
                const std::string& backend, const std::map<std::string, Tensor>& outputs) {
  for (auto& [name, ref] : pc.expected) {
    ParityRow row;
    row.weights = weights_name;
    row.candidate = cand.name;
    row.case_label = pc.label;
    row.backend = backend;
    row.output = name;
    auto t = pc.tolerance.find(name);
    row.tol = t == pc.tolerance.end() ? Tolerance{} : t->second;
    auto it = outputs.find(name);
    if (it == outputs.end()) {
      row.check.pass = false;
      row.check.shape_ok = false;
      row.check.problem = "output missing";
    } else {
      auto sel = pc.select.find(name);
      try {
        const Tensor got =
            sel == pc.select.end() ? it->second : take_indices(it->second, sel->second.axis, sel->second.indices);
        row.check = check_output(got, ref, row.tol);
      } catch (const Error& e) {
        row.check.pass = false;
        row.check.shape_ok = false;
        row.check.problem = e.what();
      }
    }
    rep.rows.push_back(std::move(row));
  }
}

// The C++ tokenizer against the folder's tokenizer cases (strings -> official ids): one row, exact.
void check_tokenizer(ParityReport& rep, const std::string& dir, std::ostream* log) {
  const std::string cases_path = dir + "/tokenizer/tokenizer_cases.json";
  if (!fs::exists(cases_path)) {
    rep.notes.push_back("tokenizer skipped: no " + cases_path);
    return;
  }
  nlohmann::json j = read_untrusted_json_file(cases_path);
  SEGMUX_CHECK(j.is_object() && j.contains("cases"), "'", cases_path, "' is not a tokenizer cases file");
  const int ctx = j.value("context_length", 32);
  Tokenizer tok = Tokenizer::load(dir + "/tokenizer", ctx);
  int64_t total = 0, wrong = 0;
  std::string first_wrong;
  for (auto& c : j["cases"]) {
    const std::string text = c.at("text").get<std::string>();
    const std::vector<int64_t> want = c.at("ids").get<std::vector<int64_t>>();
    ++total;
    std::vector<int64_t> got;
    try {
      got = tok.tokenize_one(text);
    } catch (const std::exception&) {
      got.clear();  // an error counts as a mismatch
    }
    if (got != want) {
      ++wrong;
      if (first_wrong.empty()) first_wrong = "first mismatch: '" + text + "'";
    }
  }
  ParityRow row;
  row.weights = "-";
  row.candidate = "tokenizer";
  row.case_label = std::to_string(total) + " cases";
  row.backend = "c++";
  row.output = "token_ids (exact)";
  row.check.cosine = total ? double(total - wrong) / double(total) : 1.0;
  row.check.max_abs = double(wrong);
  row.check.pass = wrong == 0 && total > 0;
  row.check.problem = first_wrong;
  rep.rows.push_back(row);
  if (log) *log << "[tokenizer] " << total - wrong << "/" << total << " cases exact" << std::endl;
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream os;
  os << std::setprecision(prec) << std::scientific << v;
  return os.str();
}

}  // namespace

ParityReport run_parity(const ParityOptions& opt, std::ostream* log) {
  ParityReport rep;
  const std::string dir = opt.fixture_dir;
  SEGMUX_CHECK(fs::is_directory(dir), "fixture folder '", dir, "' does not exist");
  const ModelConfig cfg = load_fixture_config(dir + "/config.json");

  std::vector<std::string> weights = opt.weights_files;
  if (weights.empty()) {
    for (const char* f : {"weights.safetensors", "weights.pt"})
      if (fs::exists(dir + "/" + f)) weights.push_back(dir + "/" + f);
  }
  SEGMUX_CHECK(!weights.empty(), "no weights file (weights.safetensors / weights.pt) in '", dir, "'");

  const bool want_tokenizer =
      opt.tokenizer && (opt.candidates.empty() ||
                        std::find(opt.candidates.begin(), opt.candidates.end(), "tokenizer") != opt.candidates.end());
  if (want_tokenizer) {
    try {
      check_tokenizer(rep, dir, log);
    } catch (const std::exception& e) {
      rep.failures.push_back(std::string("tokenizer: ") + e.what());
    }
  }

  std::string ort_why;
  const bool ort_ok = opt.onnxruntime && ort_available(&ort_why);
  if (opt.onnxruntime && !ort_ok) rep.notes.push_back("ONNX Runtime skipped: " + ort_why);

  // Without --candidate: the candidates the folder holds cases for (a set made for some requests only).
  std::vector<Candidate> chosen;
  for (const Candidate& cand : candidates()) {
    if (!opt.candidates.empty()) {
      if (std::find(opt.candidates.begin(), opt.candidates.end(), cand.name) != opt.candidates.end())
        chosen.push_back(cand);
    } else if (fixture_has_cases(cand.id, dir)) {
      chosen.push_back(cand);
    } else {
      rep.notes.push_back(cand.name + " skipped: the folder holds no fixture files for it");
    }
  }

  for (const std::string& wpath : weights) {
    const std::string wname = fs::path(wpath).filename().string();
    Weights w;
    try {
      w = Weights::load(wpath);
    } catch (const std::exception& e) {
      rep.failures.push_back(wname + ": cannot load weights: " + e.what());
      continue;
    }
    for (const Candidate& cand : chosen) {
      if (log) *log << "[" << wname << "] " << cand.name << " ..." << std::endl;
      try {
        std::vector<ParityCase> cases = parity_cases(cand.id, dir, cfg);
        std::map<std::string, ir::Graph> graphs;  // by variant
        for (const ParityCase& pc : cases) {
          if (!graphs.count(pc.variant)) graphs.emplace(pc.variant, cand.build(cfg, w, pc.variant));
          const ir::Graph& g = graphs.at(pc.variant);
          const std::string label = pc.variant.empty() ? cand.name : cand.name + "[" + pc.variant + "]";
          // The interpreter with reference kernels, then with the optimized ones.
          auto run_session = [&](const char* backend, bool optimized_kernels) {
            InterpreterOptions so;
            so.num_threads = opt.num_threads;
            so.use_optimized_kernels = optimized_kernels;
            Interpreter s(g, so);
            check_case(rep, wname, cand, pc, backend, s.run(pc.inputs));
          };
          if (opt.reference) run_session("reference", false);
          if (opt.optimized) run_session("optimized", true);
          if (opt.compiled) {
            compiler::CompileResult cr = compiler::compile_graph(g);
            ExecutorOptions eo;
            eo.num_threads = opt.num_threads;
            Executor ex(std::move(cr.graph), std::move(cr.plan), eo);
            check_case(rep, wname, cand, pc, "compiled", ex.run(pc.inputs));
          }
          if (opt.cuda) {
            compiler::CompileOptions cuda_opt;
            cuda_opt.strided_views = false;
            compiler::CompileResult cr = compiler::compile_graph(g, cuda_opt);
            CudaExecutorOptions co;
            co.fp32_gemm = opt.cuda_tf32 ? cuda::Fp32Gemm::tf32 : cuda::Fp32Gemm::exact;
            CudaExecutor ex(std::move(cr.graph), std::move(cr.plan), co);
            check_case(rep, wname, cand, pc, opt.cuda_tf32 ? "cuda-tf32" : "cuda", ex.run(pc.inputs));
          }
          if (ort_ok) {
            OrtPeerOptions oo;
            oo.num_threads = opt.num_threads;
            auto peer = OrtPeer::from_bytes(onnx_io::export_onnx_bytes(g), oo);
            check_case(rep, wname, cand, pc, "onnxruntime", peer->run(pc.inputs));
          }
          (void)label;
        }
      } catch (const std::exception& e) {
        rep.failures.push_back(wname + ": " + cand.name + ": " + e.what());
      }
    }
  }
  if (log) print_parity_report(rep, *log);
  return rep;
}

void print_parity_report(const ParityReport& r, std::ostream& os) {
  os << std::left << std::setw(20) << "weights" << std::setw(22) << "candidate" << std::setw(30) << "case"
     << std::setw(12) << "backend" << std::setw(26) << "output" << std::setw(12) << "cosine" << std::setw(11)
     << "max_abs" << std::setw(13) << "max_abs/ref" << std::setw(10) << "mask_iou"
     << "result\n";
  for (auto& row : r.rows) {
    const auto& c = row.check;
    std::ostringstream cos;
    cos << std::fixed << std::setprecision(8) << c.cosine;
    os << std::left << std::setw(20) << row.weights << std::setw(22) << row.candidate << std::setw(30) << row.case_label
       << std::setw(12) << row.backend << std::setw(26) << row.output;
    if (!c.problem.empty() && !c.shape_ok) {
      os << "FAIL (" << c.problem << ")\n";
      continue;
    }
    os << std::setw(12) << cos.str() << std::setw(11) << fmt(c.max_abs, 2) << std::setw(13) << fmt(c.ratio, 2)
       << std::setw(10) << (c.iou_checked ? std::to_string(c.mask_iou).substr(0, 6) : std::string("-"))
       << (c.pass ? "pass" : "FAIL");
    if (!c.problem.empty()) os << " (" << c.problem << ")";
    os << "\n";
  }
  // Worst case per candidate / output / backend over cases and weights files.
  struct Worst {
    double cosine = 1, ratio = 0, max_abs = 0;
    bool pass = true;
    int n = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Worst> worst;
  for (auto& row : r.rows) {
    Worst& w = worst[{row.candidate, row.output, row.backend}];
    w.cosine = std::min(w.cosine, row.check.cosine);
    w.ratio = std::max(w.ratio, row.check.ratio);
    w.max_abs = std::max(w.max_abs, row.check.max_abs);
    w.pass = w.pass && row.check.pass;
    ++w.n;
  }
  os << "\nworst per candidate / output / backend (over cases and weights files):\n";
  for (auto& [k, w] : worst) {
    std::ostringstream cos;
    cos << std::fixed << std::setprecision(9) << w.cosine;
    os << "  " << std::left << std::setw(22) << std::get<0>(k) << std::setw(26) << std::get<1>(k) << std::setw(12)
       << std::get<2>(k) << "cosine " << cos.str() << "  max_abs " << fmt(w.max_abs, 2) << "  max_abs/ref "
       << fmt(w.ratio, 2) << "  (" << w.n << ") " << (w.pass ? "pass" : "FAIL") << "\n";
  }
  for (auto& n : r.notes) os << "note: " << n << "\n";
  for (auto& f : r.failures) os << "FAIL: " << f << "\n";
  int64_t fails = 0;
  for (auto& row : r.rows) fails += !row.check.pass;
  os << "parity: " << r.rows.size() << " checks, " << fails << " failed, " << r.failures.size() << " errors -> "
     << (r.passed() ? "PASS" : "FAIL") << "\n";
}

}  // namespace segmux::verify
