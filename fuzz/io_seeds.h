// Seed corpora of the file-parser fuzz targets, generated in code (scripts/fuzz.sh): a target
// started with SEGMUX_FUZZ_WRITE_SEEDS=DIR writes the seeds `make_seeds()` returns to DIR and exits.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"

namespace segmux::fuzz {

template <typename MakeSeeds>
void write_io_seeds_if_asked(MakeSeeds make_seeds) {
  const char* dir = std::getenv("SEGMUX_FUZZ_WRITE_SEEDS");
  if (!dir) return;
  try {
    const std::vector<std::string> seeds = make_seeds();
    for (size_t i = 0; i < seeds.size(); ++i) {
      const std::string path = std::string(dir) + "/seed" + std::to_string(i);
      write_file_atomic(path, seeds[i].data(), seeds[i].size());
    }
    std::exit(seeds.empty() ? 1 : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz seeds: %s\n", e.what());
    std::exit(1);
  }
}

// The input as a Storage (parsers take one; a copy keeps libFuzzer's buffer read-only and exact).
inline std::shared_ptr<Storage> as_storage(const uint8_t* data, size_t size) {
  auto st = Storage::allocate(size);
  if (size) std::memcpy(st->data, data, size);
  return st;
}

// A few small tensors of the dtypes the readers support, with deterministic contents.
inline std::vector<std::pair<std::string, Tensor>> seed_tensors() {
  std::vector<std::pair<std::string, Tensor>> out;
  const std::pair<DType, Shape> specs[] = {{DType::f32, {2, 3}}, {DType::i64, {4}},     {DType::f16, {1, 2, 2}},
                                           {DType::u8, {5}},     {DType::boolean, {3}}, {DType::f64, {}}};
  int k = 0;
  for (auto& [dt, shape] : specs) {
    Tensor t(dt, shape);
    auto* b = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) b[i] = dt == DType::boolean ? uint8_t(i % 2) : uint8_t(i * 7 + 1);
    out.emplace_back("t" + std::to_string(k++), t);
  }
  return out;
}

// The bytes of a file written by one of the writers (they write paths, the fuzzers want bytes).
template <typename WriteFn>
std::string bytes_written_by(WriteFn write) {
  char tmpl[] = "/tmp/segmux_fuzz_seed_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("cannot create a temporary seed file");
  ::close(fd);
  const std::string path = tmpl;
  write(path);
  auto st = map_file(path);
  std::remove(path.c_str());
  return std::string(reinterpret_cast<const char*>(st->data), st->nbytes);
}

}  // namespace segmux::fuzz
