// segmux: one binary, many subcommands.
#include <cstdio>
#include <exception>

#include "apps/commands.h"

int main(int argc, char** argv) {
  try {
    return segmux::apps::dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segmux: error: %s\n", e.what());
    return 1;
  }
}
