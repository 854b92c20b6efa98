// SHA-256 with the x86 SHA extensions. Built with -msha -mssse3 -msse4.1 (CMakeLists.txt), so it holds
// this one function and nothing inline from shared headers: it runs only after shani_available().
#include <immintrin.h>

#include "io/sha256_blocks.h"

namespace segmux::sha256_detail {

void blocks_shani(uint32_t state[8], const uint8_t* p, size_t nblocks) {
  // The instructions keep the state as (A, B, E, F) and (C, D, G, H), highest lane first.
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state)), 0xB1);      // B A D C
  __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4)), 0x1B);  // H G F E
  __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);
  for (size_t b = 0; b < nblocks; ++b, p += 64) {
    const __m128i save_abef = abef, save_cdgh = cdgh;
    __m128i m[4];  // slot g % 4 holds the message words of group g (4 rounds each)
    for (int g = 0; g < 16; ++g) {
      __m128i w;
      if (g < 4) {
        w = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), bswap);
      } else {  // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16]
        __m128i t = _mm_sha256msg1_epu32(m[g % 4], m[(g + 1) % 4]);
        t = _mm_add_epi32(t, _mm_alignr_epi8(m[(g + 3) % 4], m[(g + 2) % 4], 4));
        w = _mm_sha256msg2_epu32(t, m[(g + 3) % 4]);
      }
      m[g % 4] = w;
      __m128i wk = _mm_add_epi32(w, _mm_load_si128(reinterpret_cast<const __m128i*>(kRoundK + 4 * g)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, save_abef);
    cdgh = _mm_add_epi32(cdgh, save_cdgh);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

}  // namespace segmux::sha256_detail
