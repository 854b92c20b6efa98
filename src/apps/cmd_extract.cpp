// segmux extract MODEL.onnx --inputs a,b --outputs c,d -o SUB.onnx: the subgraph between named tensors
// (like onnx.utils.extract_model), written as standard ONNX.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/cli.h"
#include "apps/cmd_util.h"
#include "apps/commands.h"
#include "onnx/extract.h"
#include "onnx/onnx_io.h"

namespace segmux::apps {

namespace {

int extract_main(int argc, char** argv) {
  CLI::App app{
      "Extract the subgraph of an ONNX model between named tensors: the nodes the outputs need, stopping at "
      "the inputs. Initializers it uses are copied into it; its inputs get their types and shapes from shape "
      "inference. An output that needs a model input not among --inputs is an error.",
      "segmux extract"};
  std::string model, output;
  std::vector<std::string> inputs, outputs, shapes;
  app.add_option("model", model, "ONNX model")->required();
  app.add_option("--inputs", inputs, "tensor names where the subgraph starts (comma separated)")->delimiter(',');
  app.add_option("--outputs", outputs, "tensor names the subgraph computes (comma separated)")
      ->delimiter(',')
      ->required();
  app.add_option("-o,--output,--out", output, "ONNX file to write")->required();
  app.add_option("--input-shape", shapes, "fix a model input's shape: name:d0,d1,... (repeatable)")
      ->allow_extra_args(false);
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  SEGMUX_USAGE_CHECK(output != model, "-o: the output would overwrite the input model '", model, "'");
  const ir::Graph g = import_model_graph(model, parse_input_shapes(shapes));
  ir::Graph sub;
  try {
    sub = onnx_io::extract_subgraph(g, inputs, outputs);
  } catch (const Error& e) {
    usage_fail(e.what());
  }
  onnx_io::export_onnx_file(sub, output);
  std::printf("wrote %s: %zu of %zu nodes, %zu inputs, %zu outputs, %zu initializers\n", output.c_str(),
              sub.nodes.size(), g.nodes.size(), sub.inputs.size(), sub.outputs.size(), sub.initializers.size());
  return 0;
}

CommandRegistration reg("extract", "the subgraph of an ONNX model between named tensors", extract_main);

}  // namespace

}  // namespace segmux::apps
