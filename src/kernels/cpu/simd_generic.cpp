// The generic (baseline x86-64) loops of the optimized kernels: simd_portable.h as plain code.
#define SEGMUX_KNS generic
#include "kernels/cpu/simd_portable.h"
