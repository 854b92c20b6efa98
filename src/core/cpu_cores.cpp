#include "core/cpu_cores.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace segmux {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return int(std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 1u << 16)));
}

}  // namespace segmux
