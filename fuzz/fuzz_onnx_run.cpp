// libFuzzer target: import, compile and run hostile ONNX graphs (seeds: MatMul chains, Conv, the
// pools, Resize, Reshape). Any bytes must end in outputs or a segmux::Error, never a crash, hang or
// unbounded allocation. The input's size picks the kernels (even: optimized, odd: reference).
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/compile.h"
#include "core/error.h"
#include "fuzz_run_util.h"
#include "onnx/onnx_io.h"
#include "seed_models.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_onnx_seeds_if_asked();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    segmux::ir::Graph g = segmux::onnx_io::import_onnx_bytes(bytes, "fuzz input");
    auto c = segmux::compiler::compile_graph(std::move(g));
    segmux::fuzz::run_if_small(c.graph, c.plan, size % 2 == 0);
  } catch (const segmux::Error&) {
  }
  return 0;
}
