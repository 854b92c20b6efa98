// segmux run MODEL --input NAME=FILE ... --output OUT.safetensors [--random]
// This exact form is stable: scripts outside call it.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "io/npy.h"
#include "io/safetensors.h"

namespace segmux::apps {

namespace {

int run_main(int argc, char** argv) {
  CLI::App app{
      "Run a model (ONNX or compiled .smx) on inputs from .npy/.safetensors files; write every output, "
      "keyed by its graph name, to one .safetensors file.",
      "segmux run"};
  std::string model, output, engine = "auto";
  std::vector<std::string> inputs, shapes;
  bool random = false, reference = false, as_json = false;
  uint64_t seed = 0;
  int threads = 2;
  app.add_option("model", model, "ONNX model or compiled .smx file")->required();
  app.add_option("--input", inputs,
                 "NAME=FILE (.npy, or .safetensors: the tensor called NAME, else the file's only tensor); repeatable")
      ->allow_extra_args(false);
  app.add_option("-o,--output,--out", output, "output .safetensors file")->required();
  app.add_flag("--random", random, "random values for every input not given with --input");
  app.add_option("--seed", seed, "seed for --random (default 0)");
  add_threads_option(app, threads, "threads");
  app.add_option("--engine", engine, "auto (default: .smx compiled, ONNX session), session, compiled")
      ->check(CLI::IsMember({"auto", "session", "compiled"}));
  app.add_option("--input-shape", shapes, "fix an ONNX input's shape: name:d0,d1,... (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("--reference", reference, "reference kernels only (the portable ground truth)");
  app.add_flag("--json", as_json, "print a JSON summary");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  OpenOptions oo;
  oo.engine = parse_engine(engine);
  oo.threads = threads;
  oo.reference_kernels = reference;
  oo.input_shapes = parse_input_shapes(shapes);
  auto runner = open_model(model, oo);
  std::map<std::string, Tensor> feed;
  for (auto& spec : inputs) {
    auto [name, t] = read_input_arg(spec);
    SEGMUX_USAGE_CHECK(!feed.count(name), "input '", name, "' is given twice");
    feed[name] = t;
  }
  if (random) {
    for (auto& [name, t] : verify::seeded_inputs(runner->graph(), seed))
      if (!feed.count(name)) feed[name] = t;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto outs = runner->run(feed);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::pair<std::string, Tensor>> ordered;
  for (int v : runner->graph().outputs) {
    const std::string& name = runner->graph().value(v).name;
    ordered.emplace_back(name, outs.at(name));
  }
  write_safetensors(output, ordered, {{"producer", "segmux run"}, {"model", valid_utf8(model)}});
  if (as_json) {
    nlohmann::json j;
    j["model"] = model;
    j["engine"] = runner->engine_name();
    j["seconds"] = seconds;
    j["output"] = output;
    j["outputs"] = nlohmann::json::array();
    for (auto& [name, t] : ordered)
      j["outputs"].push_back({{"name", name}, {"dtype", std::string(dtype_name(t.dtype()))}, {"shape", t.shape()}});
    std::printf("%s\n", json_text(j, 1).c_str());
  } else {
    std::printf("ran %s (%s) in %.3f s\n", model.c_str(), runner->engine_name().c_str(), seconds);
    for (auto& [name, t] : ordered)
      std::printf("  %s: %s %s\n", name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
                  shape_str(t.shape()).c_str());
    std::printf("wrote %s\n", output.c_str());
  }
  return 0;
}

CommandRegistration reg("run", "run a model (ONNX or .smx) on .npy/.safetensors inputs", run_main);

}  // namespace

}  // namespace segmux::apps
