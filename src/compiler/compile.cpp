#include "compiler/compile.h"

#include <nlohmann/json.hpp>

#include "ir/op_schema.h"

namespace segmux::compiler {

CompileResult compile_graph(ir::Graph g, const CompileOptions& opt) {
  for (auto& [name, shape] : opt.input_shapes) {
    int v = g.find_value(name);
    bool is_input = false;
    for (int in : g.inputs) is_input |= in == v;
    SEGMUX_CHECK(v >= 0 && is_input, "--input-shape names '", name, "', which is not a graph input");
    for (int64_t d : shape) SEGMUX_CHECK(d >= 0, "--input-shape ", name, ": dimension ", d, " is not a size");
    ir::Value& val = g.value(v);
    if (val.has_shape) {
      SEGMUX_CHECK(val.shape.size() == shape.size(), "--input-shape ", name, shape_str(shape),
                   ": the model's input has rank ", val.shape.size(), " ", shape_str(val.shape));
      for (size_t i = 0; i < shape.size(); ++i)
        SEGMUX_CHECK(val.shape[i] < 0 || val.shape[i] == shape[i], "--input-shape ", name, shape_str(shape),
                     " disagrees with the model's fixed shape ", shape_str(val.shape));
    }
    val.shape = shape;
    val.has_shape = true;
  }
  for (int v : g.inputs) {
    const ir::Value& val = g.value(v);
    bool known = val.has_shape;
    for (int64_t d : val.shape) known = known && d >= 0;
    SEGMUX_CHECK(known, "input '", val.name, "' has no fixed shape ", val.has_shape ? shape_str(val.shape) : "",
                 "; give one with --input-shape ", val.name, ":d0,d1,...");
  }
  // Outputs may get static shapes only once the passes fold shape arithmetic; verify fully afterwards.
  ir::verify_structure(g);
  ir::infer_shapes(g);
  CompileResult r;
  PassManagerOptions pm;
  pm.skip = opt.skip_passes;
  pm.max_rounds = opt.max_rounds;
  r.passes = run_passes(g, default_passes(opt.precision, opt.fold, opt.strided_views), pm);
  g.compact();
  ir::verify(g);
  r.plan = plan_memory(g);
  r.graph = std::move(g);
  r.target_isa = opt.target_isa == "native" ? host_isa() : opt.target_isa;
  SEGMUX_CHECK(r.target_isa == "generic" || r.target_isa == "x86-64-avx512", "unknown target ISA '", opt.target_isa,
               "' (known: native, generic, x86-64-avx512)");
  return r;
}

void write_compiled(const std::string& path, const CompileResult& r, const CompileOptions& opt) {
  nlohmann::json meta;
  meta["precision"] = opt.precision;
  meta["command_line"] = opt.command_line;
  meta["skip_passes"] = std::vector<std::string>(opt.skip_passes.begin(), opt.skip_passes.end());
  meta["passes"] = nlohmann::json::parse(r.passes.to_json());
  WriteOptions w;
  w.target_isa = r.target_isa;
  w.meta_json = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  write_offline_model(path, r.graph, r.plan, w);
}

}  // namespace segmux::compiler
