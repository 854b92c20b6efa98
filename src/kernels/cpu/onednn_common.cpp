#include "kernels/cpu/onednn_common.h"

#include <cstdlib>

#include "core/mapped_pages.h"
#include "core/zeroed_buffer.h"

namespace segmux::cpu {

std::shared_ptr<dnnl::memory> PackedWeight::get(const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                                                bool bf16_values) {
  for (auto& p : packs_)
    if (p.bf16_values == bf16_values && p.mem->get_desc() == want) return p.mem;
  const Tensor* src_values = &weight_;
  if (bf16_values) {
    if (!rounded_.defined()) {
      rounded_ = Tensor(DType::f32, weight_.shape());
      round_to_bf16_values(weight_.data<float>(), rounded_.data<float>(), weight_.numel(), 1);
    }
    src_values = &rounded_;
  }
  dnnl::memory src(user, cpu_engine(), const_cast<void*>(src_values->raw()));
  // The packed copy on memory of our own (a large one faulted in by one call, not page by page as the
  // reorder first writes it); the returned memory keeps its buffer alive.
  struct Owned {
    std::shared_ptr<void> buffer;
    dnnl::memory mem;
  };
  auto buffer = allocate_zeroed_buffer(want.get_size());
  auto owned = std::make_shared<Owned>(Owned{buffer, dnnl::memory(want, cpu_engine(), buffer.get())});
  std::shared_ptr<dnnl::memory> packed(owned, &owned->mem);
  dnnl::stream s(cpu_engine());
  dnnl::reorder(src, *packed).execute(s, src, *packed);
  s.wait();
  packs_.push_back({bf16_values, packed});
  // The packed copy is what runs: the f32 source leaves the resident set (a weight mapped from a .smx
  // file; heap memory is left alone) and the bf16-rounded temporary is freed (made again if needed).
  release_mapped_pages(weight_.raw(), weight_.nbytes());
  rounded_ = Tensor();
  return packed;
}

size_t PackedWeight::bytes() const {
  size_t total = 0;
  for (auto& p : packs_) total += p.mem->get_desc().get_size();
  return total;
}

void* run_workspace(WorkSlot slot, size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[kWorkSlots];
  Buffer& b = buffers[int(slot)];
  if (bytes > b.size || !b.data) {
    const size_t want = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void* fresh = std::aligned_alloc(64, want);
    SEGMUX_CHECK(fresh != nullptr, "out of memory: a ", want, "-byte kernel workspace");
    std::free(b.data);
    b.data = fresh;
    b.size = want;
  }
  return b.data;
}

void round_to_bf16_values(const float* src, float* dst, int64_t n, int num_threads) {
  parallel_chunks(n, n < 65536 ? 1 : num_threads,
                  [&](int64_t b, int64_t e) { round_run_to_bf16(src + b, dst + b, e - b); });
}

void bf16_to_f32_values(const uint16_t* src, float* dst, int64_t n, int num_threads) {
  parallel_chunks(n, n < 65536 ? 1 : num_threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = bf16_to_f32(src[i]);
  });
}

void f32_to_bf16_values(const float* src, uint16_t* dst, int64_t n, int num_threads) {
  parallel_chunks(n, n < 65536 ? 1 : num_threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = f32_to_bf16(src[i]);
  });
}

}  // namespace segmux::cpu
