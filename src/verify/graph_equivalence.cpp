#include "verify/graph_equivalence.h"

#include <cstdio>
#include <random>
#include <sstream>

#include "core/error.h"
#include "engines/ort/ort_model.h"
#include "runtime/interpreter.h"

namespace segmux::verify {

namespace {

// noise (optional): per output, how far the engine's run of the original model is from the reference
// kernels'. An output whose max-abs tier misses only by that much (cosine passing) passes: the
// rewrite moved work between the engine and our constant folding, whose results are that far apart
// anyway (e.g. Sin/Cos/Log of position encodings, fp32 rounding on logits in the hundreds).
void compare_all(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want,
                 EquivalenceCheck& c, const std::map<std::string, double>* noise = nullptr) {
  for (const auto& [name, ref] : want) {
    auto it = got.find(name);
    Comparison cmp;
    if (it == got.end()) {
      cmp.contract_error = "missing from the rewritten model";
      cmp.verdict = Verdict::fail;
    } else {
      cmp = compare_tensors(it->second, ref);
    }
    if (noise && cmp.verdict != Verdict::pass && cmp.contract_error.empty() && cmp.cosine_tier == Verdict::pass &&
        cmp.nonfinite_mismatch == 0 && noise->count(name) && cmp.max_abs <= 2 * noise->at(name)) {
      cmp.verdict = Verdict::pass;
      c.noise[name] = noise->at(name);
    }
    c.verdict = worse(c.verdict, cmp.verdict);
    c.outputs.emplace_back(name, cmp);
  }
}

// The inputs a model takes, out of `all` (a rewrite may drop inputs nothing uses).
std::map<std::string, Tensor> inputs_for(const std::vector<std::string>& names,
                                         const std::map<std::string, Tensor>& all) {
  std::map<std::string, Tensor> out;
  for (const std::string& n : names) {
    auto it = all.find(n);
    SEGMUX_CHECK(it != all.end(), "the rewritten model has an input '", n, "' that the original does not have");
    out.emplace(n, it->second);
  }
  return out;
}

std::vector<std::string> input_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (int v : g.inputs) names.push_back(g.value(v).name);
  return names;
}

}  // namespace

Verdict EquivalenceReport::verdict() const {
  Verdict v = Verdict::pass;
  for (const EquivalenceCheck& c : checks)
    if (c.skipped.empty()) v = worse(v, c.verdict);
  return v;
}

std::string EquivalenceReport::to_text() const {
  std::ostringstream o;
  for (const EquivalenceCheck& c : checks) {
    if (!c.skipped.empty()) {
      o << c.engine << ": not run (" << c.skipped << ")\n";
      continue;
    }
    o << c.engine << ": " << verdict_name(c.verdict) << "\n";
    for (const auto& [name, cmp] : c.outputs) {
      char line[512];
      if (!cmp.contract_error.empty())
        std::snprintf(line, sizeof line, "  %s: %s", name.c_str(), cmp.contract_error.c_str());
      else
        std::snprintf(line, sizeof line, "  %s: cosine %.8f, max abs %.3e  %s%s", name.c_str(), cmp.cosine, cmp.max_abs,
                      std::string(verdict_name(cmp.verdict)).c_str(),
                      c.noise.count(name) ? (" (ONNX Runtime's own max abs from the reference kernels on the input "
                                             "model: " +
                                             std::to_string(c.noise.at(name)) + ")")
                                                .c_str()
                                          : "");
      o << line << "\n";
    }
  }
  return o.str();
}

EquivalenceReport check_equivalent(const ir::Graph& before, const ir::Graph& after, const std::string& before_file,
                                   const std::string& after_file, uint64_t seed, int num_threads) {
  EquivalenceReport r;
  const std::map<std::string, Tensor> in = seeded_inputs(before, seed);
  EquivalenceCheck ref{"reference"};
  InterpreterOptions so{num_threads, false};
  auto want = Interpreter(before, so).run(in);
  compare_all(Interpreter(after, so).run(inputs_for(input_names(after), in)), want, ref);
  r.checks.push_back(ref);
  EquivalenceCheck ort{"onnxruntime"};
  std::string why;
  if (before_file.empty() || after_file.empty()) {
    ort.skipped = "no model files given";
  } else if (!ort_available(&why)) {
    ort.skipped = why;
  } else {
    // Both files through ONNX Runtime without its own graph rewrites: the models as written.
    OrtModelOptions oo{num_threads, false};
    OrtModel a(before_file, oo), b(after_file, oo);
    auto ort_want = a.run(inputs_for(a.input_names(), in));
    std::map<std::string, double> noise;
    for (const auto& [name, t] : ort_want)
      if (want.count(name)) noise[name] = compare_tensors(t, want.at(name)).max_abs;
    compare_all(b.run(inputs_for(b.input_names(), in)), ort_want, ort, &noise);
  }
  r.checks.push_back(ort);
  return r;
}

}  // namespace segmux::verify
