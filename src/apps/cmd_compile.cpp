// segmux compile MODEL.onnx [--input-shape name:d0,d1,...] [--precision fp32|bf16] -o FILE.smx
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"

namespace segmux::apps {

namespace {

int compile_main(int argc, char** argv) {
  CLI::App app{
      "Compile an ONNX model into an offline model file (.smx): fixed input shapes, graph passes, "
      "a static memory plan, page-aligned weights.",
      "segmux compile"};
  std::string model, output, precision = "fp32", target = "native";
  std::vector<std::string> shapes, skip;
  bool as_json = false;
  app.add_option("model", model, "ONNX model to compile")->required();
  app.add_option("-o,--output,--out", output, "compiled model file to write (.smx)")->required();
  app.add_option("--input-shape", shapes, "fix an input's shape: name:d0,d1,... (repeatable)")->allow_extra_args(false);
  app.add_option("--precision", precision, "fp32 (default) or bf16 (MatMul/Gemm/Conv weights in bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--target", target, "native (default: this machine's ISA), generic, x86-64-avx512")
      ->check(CLI::IsMember({"native", "generic", "x86-64-avx512"}));
  app.add_option("--skip-pass", skip, "do not run this pass (repeatable)")->allow_extra_args(false);
  app.add_flag("--json", as_json, "print the report as JSON");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  auto t0 = std::chrono::steady_clock::now();
  compiler::CompileOptions opt;
  opt.input_shapes = parse_input_shapes(shapes);
  opt.precision = precision;
  opt.target_isa = target;
  opt.skip_passes = std::set<std::string>(skip.begin(), skip.end());
  for (int i = 0; i < argc; ++i) opt.command_line += (i ? " " : "segmux ") + std::string(argv[i]);
  ir::Graph g = import_model_graph(model, opt.input_shapes);
  size_t nodes_in = g.nodes.size();
  auto r = compiler::compile_graph(std::move(g), opt);
  compiler::write_compiled(output, r, opt);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t weights = 0;
  for (auto& [id, t] : r.graph.initializers) weights += t.nbytes();
  if (as_json) {
    nlohmann::json j;
    j["model"] = model;
    j["output"] = output;
    j["target_isa"] = r.target_isa;
    j["precision"] = precision;
    j["nodes_in"] = nodes_in;
    j["nodes_out"] = r.graph.nodes.size();
    j["arena_bytes"] = r.plan.arena_bytes;
    j["sum_tensor_bytes"] = r.plan.sum_tensor_bytes;
    j["weights_bytes"] = weights;
    j["seconds"] = seconds;
    j["passes"] = nlohmann::json::parse(r.passes.to_json());
    std::printf("%s\n", json_text(j, 1).c_str());
  } else {
    std::printf("compiled %s -> %s (%s, %s) in %.2f s\n", model.c_str(), output.c_str(), r.target_isa.c_str(),
                precision.c_str(), seconds);
    std::printf("nodes %zu -> %zu, weights %s\n", nodes_in, r.graph.nodes.size(), human_bytes(double(weights)).c_str());
    double saved =
        r.plan.sum_tensor_bytes ? 100.0 * (1.0 - double(r.plan.arena_bytes) / double(r.plan.sum_tensor_bytes)) : 0;
    std::printf("arena %s for %s of intermediate tensors (%.1f%% saved)\n",
                human_bytes(double(r.plan.arena_bytes)).c_str(), human_bytes(double(r.plan.sum_tensor_bytes)).c_str(),
                saved);
    std::printf("%s", r.passes.to_text().c_str());
  }
  return 0;
}

CommandRegistration reg("compile", "compile an ONNX model into an offline model file (.smx)", compile_main);

}  // namespace

}  // namespace segmux::apps
