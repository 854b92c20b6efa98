// segmux: one binary, many subcommands.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "apps/cli.h"
#include "apps/commands.h"

// libgomp (the OpenMP runtime oneDNN and our kernels share) spins for a long time between parallel
// regions; on a loaded or shared machine the spinning threads steal the cores the work needs (we
// measured 10-100x slowdowns of small models under load). It reads its settings when it loads, before
// main, so the first start re-executes itself once with a short spin unless the user chose a policy.
static void ensure_short_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("GOMP_SPINCOUNT", "1000", 0) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: then carry on with the defaults
}

// Every error leaves here in one style, "segmux: error: <what>: <why>" on stderr: exit 2 when the
// command line is wrong (usage), 1 when the work failed.
int main(int argc, char** argv) {
  ensure_short_openmp_spin(argv);
  try {
    return segmux::apps::dispatch(argc, argv);
  } catch (const segmux::apps::UsageError& e) {
    std::fprintf(stderr, "segmux: error: %s: %s\n(see 'segmux %s --help')\n", argv[1], e.what(), argv[1]);
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "segmux: error: %s: out of memory\n", argc > 1 ? argv[1] : "segmux");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segmux: error: %s\n", e.what());
    return 1;
  }
}
