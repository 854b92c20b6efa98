#include "apps/commands.h"

#include "apps/cli.h"

#include <segmux/segmux.h>

#include <cstdio>
#include <cstring>

namespace segmux::apps {

std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}

CommandRegistration::CommandRegistration(std::string name, std::string summary, std::function<int(int, char**)> fn) {
  commands().push_back(Command{std::move(name), std::move(summary), std::move(fn)});
}

static void usage(FILE* out) {
  std::fprintf(out,
               "segmux: SAM 3.1 text-prompted video segmentation through compiled models\n\n"
               "usage: segmux <command> [options]   (segmux <command> --help for details)\n\ncommands:\n");
  for (auto& c : commands()) std::fprintf(out, "  %-12s %s\n", c.name.c_str(), c.summary.c_str());
}

int dispatch(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("segmux %s\n", segmux_version());
    return 0;
  }
  for (auto& c : commands())
    if (c.name == argv[1]) return c.main(argc - 1, argv + 1);
  std::vector<std::string> names;
  for (auto& c : commands()) names.push_back(c.name);
  const std::string near = closest_spelling(argv[1], names);
  std::fprintf(stderr, "segmux: error: unknown command '%s'%s\n\n", argv[1],
               near.empty() ? "" : (" (did you mean '" + near + "'?)").c_str());
  usage(stderr);
  return 2;
}

}  // namespace segmux::apps
