// libFuzzer target: the PyTorch checkpoint reader (zip directory, zip64, deflate, CRC, pickle, tensor
// views) must turn any bytes into tensors or a segmux::Error, never a crash or an unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/pytorch_zip.h"
#include "io_seeds.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    std::vector<segmux::TorchTensor> tensors;
    for (auto& [name, t] : segmux::fuzz::seed_tensors()) tensors.push_back({name, t, false});
    std::vector<std::string> seeds;
    seeds.push_back(segmux::fuzz::bytes_written_by(
        [&](const std::string& path) { segmux::write_pytorch_checkpoint(path, tensors, "archive"); }));
    // The same entries deflated, and a complex tensor under a {"model": ...} wrapper name.
    segmux::ZipReader reader(
        segmux::fuzz::as_storage(reinterpret_cast<const uint8_t*>(seeds[0].data()), seeds[0].size()), "seed");
    std::vector<std::pair<std::string, std::string>> entries;
    for (auto& e : reader.entries()) {
      auto bytes = reader.read(e);
      entries.emplace_back(e.name, std::string(reinterpret_cast<const char*>(bytes->data), bytes->nbytes));
    }
    seeds.push_back(segmux::fuzz::bytes_written_by(
        [&](const std::string& path) { segmux::write_stored_zip(path, entries, /*deflate=*/true); }));
    segmux::Tensor c(segmux::DType::f32, {3, 2});
    seeds.push_back(segmux::fuzz::bytes_written_by([&](const std::string& path) {
      segmux::write_pytorch_checkpoint(path, {{"freqs", c, true}}, "model");
    }));
    return seeds;
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto ckpt = segmux::parse_pytorch_checkpoint(segmux::fuzz::as_storage(data, size), "fuzz input");
    size_t sum = 0;  // touch every byte (ASan checks the views stay inside their storage)
    for (auto& t : ckpt.tensors)
      for (size_t i = 0; i < t.tensor.nbytes(); ++i) sum += size_t(static_cast<const uint8_t*>(t.tensor.raw())[i]);
    if (sum == 1) return 0;
  } catch (const segmux::Error&) {
  }
  return 0;
}
