// segmux verify A.safetensors B.safetensors: compares every tensor of A against the reference B.
// Exit code = verdict: 0 pass, 1 review, 2 fail, 3 the comparison could not be made (bad usage,
// unreadable file).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/commands.h"
#include "io/safetensors.h"
#include "verify/compare.h"

namespace segmux::apps {

namespace {

int verify_main(int argc, char** argv) {
  CLI::App app{
      "Compare the tensors of A against the reference B (per tensor: cosine, max abs, mean abs, max rel "
      "|a-b|/(|b|+1e-8), allclose, outlier ratio) and give the deployment-route tier of each.\n"
      "Tiers: cosine >= 0.9999 pass, >= 0.999 review, else fail; max abs (fp32) < 1e-4 pass, < 1e-3 review, "
      "else fail (fp16/bf16: 1e-2, 5e-2); integer tensors must match exactly; a missing tensor or a "
      "dtype/shape mismatch fails. A tensor's verdict is its worse tier; the overall verdict is the worst.\n"
      "Exit code: 0 pass, 1 review, 2 fail, 3 error (bad usage or unreadable file).",
      "segmux verify"};
  std::string a_path, b_path, tier = "auto";
  double atol = 1e-5, rtol = 1e-5;
  bool as_json = false, allow_extra = false;
  app.add_option("a", a_path, "tensors to check (.safetensors)")->required();
  app.add_option("b", b_path, "reference tensors (.safetensors)")->required();
  app.add_option("--atol", atol, "allclose / outlier absolute tolerance (default 1e-5)");
  app.add_option("--rtol", rtol, "allclose / outlier relative tolerance (default 1e-5)");
  app.add_option("--tier-precision", tier, "max-abs tier thresholds: auto (default), fp32, fp16")
      ->check(CLI::IsMember({"auto", "fp32", "fp16"}));
  app.add_flag("--allow-extra", allow_extra, "tensors in A that B lacks are not a failure");
  app.add_flag("--json", as_json, "print the report as JSON");
  // verify's exit codes are its verdict (0 pass, 1 review, 2 fail); any error, usage included, is 3.
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code == 0 ? 0 : 3;
  try {
    TensorFile a = read_safetensors(a_path), b = read_safetensors(b_path);
    verify::CompareOptions opt{atol, rtol, tier};
    verify::Verdict overall = verify::Verdict::pass;
    nlohmann::json report;
    report["a"] = a_path;
    report["b"] = b_path;
    report["tensors"] = nlohmann::json::array();
    if (!as_json)
      std::printf("%-40s %12s %11s %11s %11s %8s %8s  %s\n", "tensor", "cosine", "max_abs", "mean_abs", "max_rel",
                  "allclose", "outliers", "verdict");
    std::vector<std::string> names = b.names;
    for (auto& n : a.names)
      if (!b.has(n)) names.push_back(n);
    for (const std::string& name : names) {
      nlohmann::json t{{"name", name}};
      verify::Verdict v;
      if (!a.has(name) || !b.has(name)) {
        bool extra = !b.has(name);
        v = extra && allow_extra ? verify::Verdict::pass : verify::Verdict::fail;
        t["error"] = extra ? "only in A" : "missing from A";
        if (!as_json)
          std::printf("%-40s %s  %s\n", name.c_str(), t["error"].get<std::string>().c_str(),
                      std::string(verify::verdict_name(v)).c_str());
      } else {
        verify::Comparison c = verify::compare_tensors(a.at(name), b.at(name), opt);
        v = c.verdict;
        if (!c.contract_error.empty()) {
          t["error"] = c.contract_error;
          if (!as_json) std::printf("%-40s contract mismatch: %s  fail\n", name.c_str(), c.contract_error.c_str());
        } else {
          t["cosine"] = c.cosine;
          t["max_abs"] = c.max_abs;
          t["mean_abs"] = c.mean_abs;
          t["max_rel"] = c.max_rel;
          t["allclose"] = c.allclose;
          t["outlier_ratio"] = c.outlier_ratio;
          t["nonfinite_mismatch"] = c.nonfinite_mismatch;
          t["cosine_tier"] = verify::verdict_name(c.cosine_tier);
          t["max_abs_tier"] = verify::verdict_name(c.max_abs_tier);
          if (!as_json)
            std::printf("%-40s %12.8f %11.3e %11.3e %11.3e %8s %8.2e  %s\n", name.c_str(), c.cosine, c.max_abs,
                        c.mean_abs, c.max_rel, c.allclose ? "yes" : "no", c.outlier_ratio,
                        std::string(verify::verdict_name(c.verdict)).c_str());
        }
      }
      t["verdict"] = verify::verdict_name(v);
      report["tensors"].push_back(t);
      overall = verify::worse(overall, v);
    }
    report["verdict"] = verify::verdict_name(overall);
    report["exit_code"] = int(overall);
    if (as_json)
      std::printf("%s\n", json_text(report, 1).c_str());
    else
      std::printf("verdict: %s\n", std::string(verify::verdict_name(overall)).c_str());
    return int(overall);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segmux: error: verify: %s\n", e.what());
    return 3;
  }
}

CommandRegistration reg("verify", "compare two .safetensors files: metrics and pass/review/fail tiers", verify_main);

}  // namespace

}  // namespace segmux::apps
