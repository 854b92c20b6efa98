// segmux slim MODEL.onnx -o OUT.onnx: the compiler's standard-ONNX passes (shape arithmetic and
// constants folded, no-ops, duplicates and dead nodes removed), written as standard ONNX (opset 17,
// external data when large, checker clean), with its outputs checked against the input model's on
// seeded inputs (reference kernels; ONNX Runtime too when available). Exit 1 unless they pass.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "compiler/slim.h"
#include "onnx/onnx_io.h"
#include "verify/graph_equivalence.h"

namespace segmux::apps {

namespace {

int slim_main(int argc, char** argv) {
  CLI::App app{
      "Slim an ONNX model with the compiler's passes that keep standard ONNX: shape arithmetic and constant "
      "folding, Identity/no-op removal, duplicate (CSE) and dead-node removal; no fusion into segmux ops. "
      "The result is standard ONNX (opset 17, external data when large, ONNX checker clean). Its outputs are "
      "compared with the input model's on seeded inputs through our reference kernels and, when available, "
      "ONNX Runtime; exit 1 unless every comparison passes.",
      "segmux slim"};
  std::string model, output;
  std::vector<std::string> shapes;
  bool no_verify = false, as_json = false;
  uint64_t seed = 1234;
  int threads = 2;
  app.add_option("model", model, "ONNX model to slim")->required();
  app.add_option("-o,--output,--out", output, "slimmed ONNX model to write")->required();
  app.add_option("--input-shape", shapes, "fix an input's shape: name:d0,d1,... (repeatable)")->allow_extra_args(false);
  app.add_flag("--no-verify", no_verify, "do not run the two models (e.g. inputs without fixed shapes)");
  app.add_option("--seed", seed, "seed of the verification inputs (default 1234)");
  add_threads_option(app, threads, "threads for the verification runs");
  app.add_flag("--json", as_json, "print the report as JSON");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(output != model, "-o: the output would overwrite the input model '", model, "'");
  const ir::Graph before = import_model_graph(model, parse_input_shapes(shapes));
  for (int v : before.inputs) {
    bool fixed = before.value(v).has_shape;
    for (int64_t d : before.value(v).shape) fixed = fixed && d >= 0;
    SEGMUX_USAGE_CHECK(fixed || no_verify, "input '", before.value(v).name,
                       "' has no fixed shape: the check needs one (--input-shape NAME:d0,d1,...) or --no-verify");
  }
  ir::Graph after = before;
  compiler::SlimReport r = compiler::slim_graph(after);
  onnx_io::export_onnx_file(after, output);
  nlohmann::json j = nlohmann::json::parse(r.to_json());
  j["model"] = model;
  j["output"] = output;
  if (!as_json)
    std::printf("slimmed %s -> %s\n%s(Constant nodes are read as initializers: counts are of the other nodes)\n",
                model.c_str(), output.c_str(), r.to_text().c_str());
  verify::Verdict verdict = verify::Verdict::pass;
  if (no_verify) {
    j["verification"] = "not run (--no-verify)";
  } else {
    // The slimmed model as written (re-read) against the input model as read.
    const ir::Graph written = import_model_graph(output, parse_input_shapes(shapes));
    verify::EquivalenceReport e = verify::check_equivalent(before, written, model, output, seed, threads);
    verdict = e.verdict();
    j["verification"] = e.to_text();
    j["verdict"] = verify::verdict_name(verdict);
    if (!as_json)
      std::printf("verification on seeded inputs (seed %llu), slimmed vs input model:\n%sverdict: %s\n",
                  (unsigned long long)seed, e.to_text().c_str(), verdict == verify::Verdict::pass ? "PASS" : "FAIL");
  }
  if (as_json) std::printf("%s\n", json_text(j, 1).c_str());
  return verdict == verify::Verdict::pass ? 0 : 1;
}

CommandRegistration reg("slim", "fold and clean an ONNX model, keeping standard ONNX; outputs verified", slim_main);

}  // namespace

}  // namespace segmux::apps
