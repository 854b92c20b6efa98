// segmux fixture-config: a golden fixture's config.json (or trace.json) as the product reads it: the
// flat model config (model.json's "config", what --config and the C API / Python `config` take) or,
// with --control, the flat control-plane settings (the C API / Python `control_config`).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/cli.h"
#include "apps/commands.h"
#include "io/files.h"
#include "models/sam31/config.h"
#include "pipeline/predictor/control_config.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::apps {

namespace {

int fixture_config_main(int argc, char** argv) {
  CLI::App app{
      "Convert a golden fixture's config.json to the flat model config the library reads (or, with "
      "--control, its control-plane settings, from config.json or trace.json). Written atomically.",
      "segmux fixture-config"};
  std::string in, out;
  bool control = false;
  app.add_option("fixture_config", in, "the fixture's config.json (or trace.json with --control)")->required();
  app.add_option("-o,--out,--output", out, "the flat JSON to write")->required();
  app.add_flag("--control", control, "write the control-plane settings instead of the model config");
  if (int code = parse_command_line(app, argc, argv); code >= 0) return code;
  const std::string text = control ? pipeline::control_config_to_json(verify::load_fixture_control_config(in))
                                   : sam31::config_to_json(verify::load_fixture_config(in));
  write_file_atomic(out, text.data(), text.size());
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

CommandRegistration fixture_config_registration("fixture-config",
                                                "convert a fixture's config.json to the flat model config",
                                                fixture_config_main);

}  // namespace

}  // namespace segmux::apps
