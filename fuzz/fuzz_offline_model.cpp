// libFuzzer target: the offline model (.smx) loader must turn any bytes into a model or a
// segmux::Error, never a crash; a model that loads is then run (when small, fuzz_run_util.h). With
// SEGMUX_FUZZ_NO_CHECKSUMS=1 no checksum is verified, so mutations reach the section parsers behind them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "fuzz_run_util.h"
#include "runtime/offline_model.h"
#include "seed_models.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_seeds_if_asked([](const segmux::ir::Graph& g) {
    auto c = segmux::compiler::compile_graph(g);
    segmux::WriteOptions w;
    w.target_isa = "generic";
    return segmux::serialize_offline_model(c.graph, c.plan, w);
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
  segmux::LoadOptions opt;
  opt.verify_checksums = !skip_checksums;
  opt.check_isa = false;
  try {
    auto m = segmux::load_offline_model(storage, "fuzz input", opt);
    segmux::fuzz::run_if_small(m.graph, m.plan, size % 2 == 0);
  } catch (const segmux::Error&) {
  }
  return 0;
}
