// Registers every reference kernel. Each op family lives in its own file and exposes a
// register_*_reference() function listed here.
#include "kernels/kernel.h"

namespace segmux {

void register_reference_kernels() {}

}  // namespace segmux
