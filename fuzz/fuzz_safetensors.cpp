// libFuzzer target: the safetensors reader (header JSON, dtypes, shapes, offsets, metadata) must turn
// any bytes into tensors or a segmux::Error, never a crash, deep recursion or an out-of-bounds view.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/safetensors.h"
#include "io_seeds.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    auto tensors = segmux::fuzz::seed_tensors();
    std::vector<std::string> seeds;
    seeds.push_back(segmux::fuzz::bytes_written_by([&](const std::string& path) {
      segmux::write_safetensors(path, tensors, {{"format", "pt"}, {"note", "seed"}});
    }));
    seeds.push_back(segmux::fuzz::bytes_written_by(
        [&](const std::string& path) { segmux::write_safetensors(path, {tensors[0]}); }));
    return seeds;
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    segmux::TensorFile f = segmux::parse_safetensors(segmux::fuzz::as_storage(data, size), "fuzz input");
    size_t sum = f.metadata.size();  // touch every byte (ASan checks the views stay inside the file)
    for (auto& name : f.names) {
      const segmux::Tensor& t = f.at(name);
      for (size_t i = 0; i < t.nbytes(); ++i) sum += size_t(static_cast<const uint8_t*>(t.raw())[i]);
    }
    if (sum == 1) return 0;
  } catch (const segmux::Error&) {
  }
  return 0;
}
