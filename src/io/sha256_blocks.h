// SHA-256 compression of whole 64-byte blocks: the portable loop and, where the CPU has the SHA
// extensions (CPUID leaf 7 EBX bit 29, with SSSE3 and SSE4.1), the SHA-NI one (~10x faster: a
// 3.4 GB checkpoint hashes in seconds). Internal to io/sha256.cpp and its tests.
#pragma once
#include <cstddef>
#include <cstdint>

namespace segmux::sha256_detail {

// The 64 round constants (FIPS 180-4), one table for both loops; 16-byte aligned for SHA-NI loads.
extern const uint32_t kRoundK[64];

void blocks_portable(uint32_t state[8], const uint8_t* p, size_t nblocks);
// Compiled with -msha -msse4.1 (CMakeLists.txt): call only when shani_available().
void blocks_shani(uint32_t state[8], const uint8_t* p, size_t nblocks);
bool shani_available();  // CPUID, and SEGMUX_SHA256=portable turns it off

}  // namespace segmux::sha256_detail
