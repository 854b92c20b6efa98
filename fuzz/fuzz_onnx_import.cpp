// libFuzzer target: the ONNX loader must turn any bytes into a graph or a segmux::Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "onnx/onnx_io.h"
#include "seed_models.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_onnx_seeds_if_asked();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    segmux::onnx_io::import_onnx_bytes(bytes, "fuzz input");
  } catch (const segmux::Error&) {
  }
  return 0;
}
