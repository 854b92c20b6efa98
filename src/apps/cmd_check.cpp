// segmux check MODEL: ONNX checker, shape inference, dangling outputs, unsupported ops, a probe run.
// Exit code: 0 when every check passes, 1 otherwise.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "compiler/graph_stats.h"
#include "ir/op_schema.h"

namespace segmux::apps {

namespace {

struct CheckResult {
  std::string name;
  bool ok = true;
  bool skipped = false;
  std::string detail;
};

int check_main(int argc, char** argv) {
  CLI::App app{
      "Check that a model is usable: it loads (for ONNX: the ONNX checker passes), shape inference "
      "succeeds, no graph output dangles, every op has a kernel, and a probe run on random inputs "
      "gives finite outputs. Exit code 0 when all pass, 1 otherwise.",
      "segmux check"};
  std::string model;
  std::vector<std::string> shapes;
  bool as_json = false, no_probe = false;
  int threads = 1;
  uint64_t seed = 0;
  app.add_option("model", model, "ONNX model or compiled .smx file")->required();
  app.add_option("--input-shape", shapes, "fix an ONNX input's shape: name:d0,d1,... (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("--no-probe", no_probe, "skip the probe run");
  add_threads_option(app, threads, "threads of the probe run");
  app.add_option("--seed", seed, "seed of the probe inputs");
  app.add_flag("--json", as_json, "print the report as JSON");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  std::vector<CheckResult> results;
  auto record = [&](const std::string& name, auto&& fn) -> bool {
    CheckResult r{name};
    try {
      r.detail = fn();
    } catch (const std::exception& e) {
      r.ok = false;
      r.detail = e.what();
    }
    results.push_back(r);
    return r.ok;
  };
  ir::Graph g;
  bool smx = is_smx_file(model);
  bool loaded = record(smx ? "load (checksums, version, ISA)" : "load (ONNX checker)", [&] {
    if (smx)
      g = segmux::load_offline_model_file(model).graph;
    else
      g = import_model_graph(model, parse_input_shapes(shapes), false);
    return std::to_string(g.nodes.size()) + " nodes";
  });
  bool shaped = false;
  if (loaded) {
    record("graph outputs produced (none dangles)", [&] {
      ir::verify_structure(g);
      return std::to_string(g.outputs.size()) + " outputs";
    });
    shaped = record("shape inference", [&] {
      ir::infer_shapes(g);
      std::string missing;
      for (int v : g.outputs)
        if (!g.value(v).has_shape) missing += " " + g.value(v).name;
      SEGMUX_CHECK(missing.empty(), "outputs without a static shape:", missing);
      return std::string("all outputs have static shapes");
    });
    record("every op has a kernel", [&] {
      auto st = compiler::graph_stats(g);
      std::string list;
      for (auto& u : st.unsupported) list += (list.empty() ? "" : "; ") + u;
      SEGMUX_CHECK(st.unsupported.empty(), list);
      return std::to_string(st.op_histogram.size()) + " op types";
    });
  }
  if (loaded && shaped && !no_probe) {
    record("probe run on random inputs", [&] {
      OpenOptions oo;
      oo.threads = threads;
      oo.input_shapes = parse_input_shapes(shapes);
      auto runner = open_model(model, oo);
      auto outs = runner->run(verify::seeded_inputs(runner->graph(), seed));
      int64_t nonfinite = 0;
      for (auto& [name, t] : outs)
        if (dtype_is_float(t.dtype()))
          for (int64_t i = 0; i < t.numel(); ++i) nonfinite += !std::isfinite(t.get_as_double(i));
      SEGMUX_CHECK(nonfinite == 0, nonfinite, " non-finite output values");
      return std::to_string(outs.size()) + " outputs, all finite (" + runner->engine_name() + ")";
    });
  } else {
    results.push_back(
        CheckResult{"probe run on random inputs", true, true, no_probe ? "--no-probe" : "earlier check failed"});
  }
  bool all_ok = true;
  for (auto& r : results) all_ok = all_ok && r.ok;
  if (as_json) {
    nlohmann::json j;
    j["model"] = model;
    j["ok"] = all_ok;
    j["checks"] = nlohmann::json::array();
    for (auto& r : results)
      j["checks"].push_back({{"name", r.name}, {"ok", r.ok}, {"skipped", r.skipped}, {"detail", r.detail}});
    std::printf("%s\n", json_text(j, 1).c_str());
  } else {
    for (auto& r : results)
      std::printf("[%s] %s: %s\n", r.skipped ? "skip" : r.ok ? " ok " : "FAIL", r.name.c_str(), r.detail.c_str());
    std::printf("%s\n", all_ok ? "usable" : "NOT usable");
  }
  return all_ok ? 0 : 1;
}

CommandRegistration reg("check", "check a model: ONNX checker, shapes, dangling outputs, kernels, probe run",
                        check_main);

}  // namespace

}  // namespace segmux::apps
