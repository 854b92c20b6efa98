// libFuzzer target: the .npy reader (magic, versions, header dict, dtype, shape, data size) must turn
// any bytes into a tensor or a segmux::Error, never a crash or an allocation the file cannot back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/npy.h"
#include "io_seeds.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    std::vector<std::string> seeds;
    for (auto& [name, t] : segmux::fuzz::seed_tensors())
      if (t.dtype() != segmux::DType::bf16) seeds.push_back(segmux::npy_bytes(t));
    return seeds;
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    segmux::Tensor t = segmux::parse_npy(segmux::fuzz::as_storage(data, size), "fuzz input");
    size_t sum = 0;
    for (size_t i = 0; i < t.nbytes(); ++i) sum += size_t(static_cast<const uint8_t*>(t.raw())[i]);
    if (sum == 1) return 0;
  } catch (const segmux::Error&) {
  }
  return 0;
}
