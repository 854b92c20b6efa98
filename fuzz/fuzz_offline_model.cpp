// libFuzzer target: the offline model (.smx) loader must turn any bytes into a model or a
// segmux::Error, never a crash. With SEGMUX_FUZZ_NO_CHECKSUMS=1 no checksum is verified, so
// mutations reach the section parsers behind them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "runtime/offline_model.h"
#include "seed_models.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_seeds_if_asked([](const segmux::ir::Graph& g) {
    auto c = segmux::compiler::compile_graph(g);
    segmux::segmux::WriteOptions w;
    w.target_isa = "generic";
    return segmux::segmux::serialize_offline_model(c.graph, c.plan, w);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool skip_checksums = [] {
    const char* v = std::getenv("SEGMUX_FUZZ_NO_CHECKSUMS");
    return v && std::strcmp(v, "1") == 0;
  }();
  auto storage = segmux::Storage::allocate(size);
  if (size) std::memcpy(storage->data, data, size);
  segmux::segmux::LoadOptions opt;
  opt.verify_checksums = !skip_checksums;
  opt.check_isa = false;
  try {
    segmux::segmux::load_offline_model(storage, "fuzz input", opt);
  } catch (const segmux::Error&) {
  }
  return 0;
}
