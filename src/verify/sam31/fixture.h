// Reading the golden fixture files (safetensors written by the official-code capture) for the
// candidates' parity cases: tensors stored once under one name and referenced by others through
// "alias:<name>" metadata, and required metadata entries.
#pragma once
#include <string>

#include "core/tensor.h"
#include "io/safetensors.h"

namespace segmux::verify {

// The tensor `name`, following the file's "alias:<name>" metadata when it is stored under another
// name. Error naming the tensor when it is neither stored nor aliased.
const Tensor& fixture_tensor(const TensorFile& f, const std::string& name);

// The metadata entry `key`; `what` (the case label) names the file in the error when it is missing.
const std::string& fixture_meta(const TensorFile& f, const std::string& key, const std::string& what);

}  // namespace segmux::verify
