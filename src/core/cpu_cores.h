// The cores this process may run on: the default thread count of every command and of the library
// (issue 9: not a fixed 2).
#pragma once

namespace segmux {

// CPU affinity count (sched_getaffinity), else the hardware threads; at least 1.
int usable_cores();

}  // namespace segmux
