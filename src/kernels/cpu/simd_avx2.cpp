// The AVX2 + FMA loops of the optimized kernels: simd_portable.h compiled with -mavx2 -mfma -mf16c
// (auto-vectorised 8 lanes wide). Reached only through avx2::k* when active_isa() allows AVX2.
#define SEGMUX_KNS avx2
#include "kernels/cpu/simd_portable.h"
