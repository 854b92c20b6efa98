#include "kernels/isa.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace segmux {

namespace {

#if defined(__x86_64__)
// XCR0: which register states the OS saves on context switches. AVX needs XMM|YMM (bits 1-2),
// AVX-512 also opmask|ZMM_Hi256|Hi16_ZMM (bits 5-7). Without OSXSAVE, XGETBV itself would fault.
uint64_t os_saved_state() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

Isa detect() {
  __builtin_cpu_init();
  const uint64_t xcr0 = os_saved_state();
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  // F16C from CPUID leaf 1 directly: clang 14's __builtin_cpu_supports does not know "f16c".
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  const bool avx2 = ymm && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  if (!avx2) return Isa::generic;
  const bool avx512 = zmm && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512 ? Isa::avx512 : Isa::avx2;
}
#else
Isa detect() { return Isa::generic; }
#endif

Isa from_environment() {
  const Isa cpu = cpu_isa();
  const char* v = std::getenv("SEGMUX_ISA");
  bool lowered = false;
  Isa isa = isa_from_env(v, cpu, &lowered);
  if (lowered)
    std::fprintf(stderr, "segmux: warning: SEGMUX_ISA=%s is more than this CPU supports; using %s\n", v, isa_name(cpu));
  return isa;
}

std::atomic<int>& forced() {  // -1: not forced
  static std::atomic<int> f{-1};
  return f;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    default:
      return "generic";
  }
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa i : {Isa::generic, Isa::avx2, Isa::avx512})
    if (name == isa_name(i)) return i;
  return std::nullopt;
}

Isa cpu_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa isa_from_env(const char* value, Isa cpu, bool* lowered) {
  if (lowered) *lowered = false;
  if (!value || !*value) return cpu;
  std::optional<Isa> want = parse_isa(value);
  SEGMUX_CHECK(want.has_value(), "SEGMUX_ISA='", value, "': expected generic, avx2 or avx512");
  if (int(*want) <= int(cpu)) return *want;
  if (lowered) *lowered = true;
  return cpu;
}

Isa active_isa() {
  const int f = forced().load(std::memory_order_relaxed);
  if (f >= 0) return Isa(f);
  static const Isa isa = from_environment();
  return isa;
}

Isa set_active_isa(Isa isa) {
  const Isa level = int(isa) <= int(cpu_isa()) ? isa : cpu_isa();
  forced().store(int(level), std::memory_order_relaxed);
  return level;
}

}  // namespace segmux
