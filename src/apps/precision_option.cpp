#include "apps/precision_option.h"

#include "apps/cli.h"

namespace segmux::apps {

std::string precision_problem(const std::string& s) {
  if (s == "fp32" || s == "bf16") return "";
  return "'" + s + "' is not a precision: use fp32 or bf16";
}

CLI::Option* add_precision_option(CLI::App& app, std::string& precision, const std::string& help) {
  CLI::Validator v([](std::string& s) { return precision_problem(s); }, "fp32|bf16", "precision");
  return app.add_option("--precision", precision, help + " (default " + precision + ")")->check(v);
}

void check_precision_use(const CLI::App& app, const pipeline::ModelSource& src) {
  if (app.count("--precision") == 0) return;
  SEGMUX_USAGE_CHECK(!src.weights.empty(),
                     "--precision applies to a --weights checkpoint (a package's or model folder's precision was "
                     "chosen when it was made: segmux deploy --precision)");
  SEGMUX_USAGE_CHECK(src.engine == "smx" || src.precision == "fp32", "--precision ", src.precision,
                     " needs --engine smx (ONNX Runtime runs the exported fp32 ONNX files)");
}

}  // namespace segmux::apps
