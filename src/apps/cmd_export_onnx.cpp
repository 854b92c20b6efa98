// segmux export-onnx --candidate NAME --weights W [--config C] -o FILE.onnx: one deployment
// candidate as a standard ONNX model (opset 17, default domain only).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/cli.h"
#include "apps/commands.h"
#include "models/sam31/candidates.h"
#include "models/sam31/config.h"
#include "models/sam31/weights.h"
#include "onnx/onnx_io.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {

namespace {

// The compiled files that are a candidate's build variant (memory_encoder_image_size, ...).
std::string compiled_file_variants() {
  std::string s;
  for (const sam31::CompiledFile& f : sam31::compiled_files())
    if (!f.variant.empty()) s += (s.empty() ? "" : ", ") + f.file;
  return s;
}

int export_onnx_main(int argc, char** argv) {
  CLI::App app{"Export a SAM 3.1 deployment candidate, built from the weights, as an ONNX model.",
               "segmux export-onnx"};
  std::string candidate, weights, config, out, variant;
  app.add_option("--candidate", candidate,
                 "candidate or compiled-file name (text_encoder, backbone, ..., memory_encoder_image_size)")
      ->required();
  app.add_option("--weights", weights, "weights file (.pt or .safetensors)")->required();
  app.add_option("--config", config, "config file (flat JSON or a fixture config.json; default: full-size)");
  app.add_option("--variant", variant, "build variant (e.g. fp32_mlp for the backbone)");
  app.add_option("-o,--output,--out", out, "output .onnx file")->required();
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  const sam31::ModelConfig cfg =
      config.empty() ? sam31::default_config() : verify::load_model_or_fixture_config(config);
  const sam31::Candidate* def = sam31::find_candidate(candidate);
  if (!def) {  // a compiled file of a deploy package (a candidate's build variant) exports as that variant
    for (const sam31::CompiledFile& f : sam31::compiled_files()) {
      if (f.file != candidate) continue;
      SEGMUX_USAGE_CHECK(variant.empty() || variant == f.variant, "--variant: '", candidate, "' is candidate '",
                         sam31::candidate(f.candidate).name, "' with variant '", f.variant, "', not '", variant, "'");
      def = &sam31::candidate(f.candidate);
      variant = f.variant;
    }
  }
  SEGMUX_USAGE_CHECK(def, "--candidate: unknown candidate '", candidate, "' (known: ", sam31::candidate_names(),
                     ", and the compiled files ", compiled_file_variants(), ")");
  sam31::Weights w = sam31::Weights::load(weights);
  SEGMUX_USAGE_CHECK(
      variant.empty() || std::find(def->variants.begin(), def->variants.end(), variant) != def->variants.end(),
      "--variant: candidate '", candidate, "' has no build variant '", variant, "'");
  ir::Graph g = def->build(cfg, w, variant);
  onnx_io::export_onnx_file(g, out);
  std::printf("wrote %s (%zu nodes, %zu inputs, %zu outputs)\n", out.c_str(), g.nodes.size(), g.inputs.size(),
              g.outputs.size());
  return 0;
}

CommandRegistration reg("export-onnx", "export a SAM 3.1 candidate as ONNX", export_onnx_main);

}  // namespace

}  // namespace segmux::apps
