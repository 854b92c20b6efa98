// SAM 3.1 weights with official key names (detector.*, tracker.model.*), read from the official
// PyTorch checkpoint (.pt, never executing pickle code) or from .safetensors. Data stays mmapped.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace segmux::sam31 {

class Weights {
 public:
  // Opens a .pt or .safetensors file (chosen by content). Applies the official key remapping
  // (sam3_model. -> detector., sam2_predictor. -> tracker.) and unwraps a top-level "model" dict.
  // complex64 RoPE tables come back as f32 with a trailing dimension 2 (real, imag).
  static Weights load(const std::string& path);

  const Tensor& get(const std::string& key) const;  // throws naming the key when absent
  bool has(const std::string& key) const { return tensors_.count(key) != 0; }
  std::vector<std::string> keys() const;
  size_t size() const { return tensors_.size(); }
  void set(const std::string& key, Tensor t) { tensors_[key] = std::move(t); }

 private:
  std::map<std::string, Tensor> tensors_;
};

}  // namespace segmux::sam31
