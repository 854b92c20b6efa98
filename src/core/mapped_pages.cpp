#include "core/mapped_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace segmux {

namespace {

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, uintptr_t> ranges;  // begin -> end
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: mappings may be unregistered during exit
  return *r;
}

}  // namespace

void register_mapped_range(const void* begin, size_t nbytes) {
  if (!begin || !nbytes) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ranges[uintptr_t(begin)] = uintptr_t(begin) + nbytes;
}

void unregister_mapped_range(const void* begin) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ranges.erase(uintptr_t(begin));
}

void release_mapped_pages(const void* p, size_t nbytes) {
  if (!p || !nbytes) return;
  const uintptr_t b = uintptr_t(p), e = b + nbytes;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);  // held across madvise: the mapping cannot go away meanwhile
  auto it = r.ranges.upper_bound(b);
  if (it == r.ranges.begin()) return;
  --it;
  if (b < it->first || e > it->second) return;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (b + page - 1) / page * page, hi = e / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

size_t mapped_bytes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  size_t n = 0;
  for (auto& [b, e] : r.ranges) n += e - b;
  return n;
}

}  // namespace segmux
