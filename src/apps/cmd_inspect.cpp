// segmux inspect MODEL: signature, op histogram, parameters, FLOP estimate, unsupported ops.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "compiler/graph_stats.h"
#include "io/json_limits.h"
#include "ir/op_schema.h"

namespace segmux::apps {

namespace {

nlohmann::json value_json(const ir::Value& v) {
  nlohmann::json j{{"name", v.name}, {"dtype", std::string(dtype_name(v.dtype))}};
  j["shape"] = v.has_shape ? nlohmann::json(v.shape) : nlohmann::json(nullptr);
  return j;
}

int inspect_main(int argc, char** argv) {
  CLI::App app{
      "Describe a model (ONNX or .smx): inputs and outputs, op histogram, parameter count, FLOP estimate, "
      "ops segmux cannot run.",
      "segmux inspect"};
  std::string model;
  std::vector<std::string> shapes;
  bool as_json = false;
  app.add_option("model", model, "ONNX model or compiled .smx file")->required();
  app.add_option("--input-shape", shapes, "fix an ONNX input's shape for the FLOP estimate: name:d0,d1,...")
      ->allow_extra_args(false);
  app.add_flag("--json", as_json, "print the report as JSON");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  ir::Graph g;
  nlohmann::json j;
  j["model"] = model;
  std::string shape_error;
  if (is_smx_file(model)) {
    auto m = segmux::load_offline_model_file(model);
    g = std::move(m.graph);
    j["format"] = "smx";
    j["target_isa"] = m.target_isa;
    j["producer"] = m.producer;
    j["arena_bytes"] = m.plan.arena_bytes;
    j["sum_tensor_bytes"] = m.plan.sum_tensor_bytes;
    j["file_bytes"] = m.file_bytes;
    j["meta"] = segmux::parse_untrusted_json(m.meta_json, model + " META section");
  } else {
    g = import_model_graph(model, parse_input_shapes(shapes), false);
    j["format"] = "onnx";
    try {
      ir::infer_shapes(g);
    } catch (const Error& e) {
      shape_error = e.what();
      j["shape_inference_error"] = shape_error;
    }
  }
  auto st = compiler::graph_stats(g);
  j["graph"] = g.name;
  j["inputs"] = nlohmann::json::array();
  j["outputs"] = nlohmann::json::array();
  for (int v : g.inputs) j["inputs"].push_back(value_json(g.value(v)));
  for (int v : g.outputs) j["outputs"].push_back(value_json(g.value(v)));
  j["nodes"] = g.nodes.size();
  j["op_histogram"] = st.op_histogram;
  j["parameters"] = st.parameters;
  j["weight_bytes"] = st.weight_bytes;
  j["flops"] = st.flops;
  j["heavy_nodes_without_flop_estimate"] = st.nodes_without_flops_estimate;
  j["unsupported_ops"] = st.unsupported;
  if (as_json) {
    std::printf("%s\n", json_text(j, 1).c_str());
    return 0;
  }
  std::printf("%s: %s model '%s', %zu nodes\n", model.c_str(), j["format"].get<std::string>().c_str(), g.name.c_str(),
              g.nodes.size());
  if (j.contains("target_isa"))
    std::printf("target ISA %s, arena %s (tensors %s), file %s\n", j["target_isa"].get<std::string>().c_str(),
                human_bytes(double(j["arena_bytes"].get<size_t>())).c_str(),
                human_bytes(double(j["sum_tensor_bytes"].get<size_t>())).c_str(),
                human_bytes(double(j["file_bytes"].get<size_t>())).c_str());
  auto sig = [&](const char* what, const std::vector<int>& ids) {
    std::printf("%s:\n", what);
    for (int v : ids) {
      const ir::Value& val = g.value(v);
      std::printf("  %-32s %-5s %s\n", val.name.c_str(), std::string(dtype_name(val.dtype)).c_str(),
                  val.has_shape ? shape_str(val.shape).c_str() : "?");
    }
  };
  sig("inputs", g.inputs);
  sig("outputs", g.outputs);
  std::printf("parameters %lld (%s)\n", (long long)st.parameters, human_bytes(double(st.weight_bytes)).c_str());
  std::printf("FLOP estimate %.3f GFLOP%s\n", st.flops / 1e9,
              st.nodes_without_flops_estimate ? " (some heavy nodes have unknown shapes)" : "");
  if (!shape_error.empty()) std::printf("shape inference failed: %s\n", shape_error.c_str());
  std::printf("ops:\n");
  for (auto& [op, n] : st.op_histogram) std::printf("  %-28s %d\n", op.c_str(), n);
  if (st.unsupported.empty()) std::printf("unsupported ops: none\n");
  for (auto& u : st.unsupported) std::printf("unsupported: %s\n", u.c_str());
  return 0;
}

CommandRegistration reg("inspect", "describe a model: signature, ops, parameters, FLOPs, unsupported ops",
                        inspect_main);

}  // namespace

}  // namespace segmux::apps
