// The ONNX Runtime peer of our tests, benchmarks and parity runs: the product's ONNX Runtime engine
// (engines/ort/ort_model.h) under the names verification code uses.
#pragma once
#include "engines/ort/ort_model.h"

namespace segmux::verify {

using OrtPeer = OrtModel;
using OrtPeerOptions = OrtModelOptions;

}  // namespace segmux::verify
