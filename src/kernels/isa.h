// Run-time instruction-set dispatch for our optimized CPU kernels. The library is built for baseline
// x86-64; only the files named *_avx2.cpp / *_avx512.cpp use wider instructions, and they are reached
// only through the tables for a level that active_isa() allows (CPUID and the OS's saved register
// state, lowered by SEGMUX_ISA=generic|avx2|avx512). oneDNN dispatches itself.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace segmux {

enum class Isa : int {
  generic = 0,  // baseline x86-64 (SSE2): plain C++
  avx2 = 1,     // AVX2 + FMA + F16C (Haswell and later)
  avx512 = 2,   // AVX-512 F/BW/DQ/VL on top of avx2 (Skylake-SP and later), ZMM state enabled by the OS
};

const char* isa_name(Isa isa);                        // "generic", "avx2", "avx512"
std::optional<Isa> parse_isa(std::string_view name);  // inverse of isa_name; nullopt for anything else

// Best level this CPU and its OS support (CPUID + XGETBV), computed once.
Isa cpu_isa();

// The level of SEGMUX_ISA's value on a CPU whose best level is `cpu`: an unset or empty value means
// `cpu`; a level above `cpu` is lowered to `cpu` (*lowered set); an unknown value throws naming it.
Isa isa_from_env(const char* value, Isa cpu, bool* lowered = nullptr);

// The level optimized kernels use from now on: cpu_isa() lowered by SEGMUX_ISA (read once; a request
// above the CPU's level prints a warning and is ignored).
Isa active_isa();

// Forces the active level (tests); a level above cpu_isa() is lowered to it. Returns the level that
// is now active. Kernels created before keep the level they were created with.
Isa set_active_isa(Isa isa);

}  // namespace segmux
