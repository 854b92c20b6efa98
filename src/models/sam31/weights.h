// SAM 3.1 weights with official key names (detector.*, tracker.model.*), read from the official
// PyTorch checkpoint (.pt, never executing pickle code) or from .safetensors. Data stays mmapped.
#pragma once
#include <map>
#include <set>
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
  void erase(const std::string& key) {
    tensors_.erase(key);
    complex_.erase(key);
  }

  // True when the checkpoint stored this tensor as complex (a .pt complex64 buffer). Safetensors
  // files carry no such marker, so their f32 [..., 2] RoPE tables report false.
  bool is_complex(const std::string& key) const { return complex_.count(key) != 0; }
  // Keys in the order the file stored them (state_dict order for .pt, data order for safetensors).
  const std::vector<std::string>& file_order() const { return file_order_; }

 private:
  std::map<std::string, Tensor> tensors_;
  std::set<std::string> complex_;
  std::vector<std::string> file_order_;
};

// The official loader's internal-name remapping: "sam3_model.x" -> "detector.x",
// "sam2_predictor.x" -> "tracker.x"; other keys are unchanged.
std::string remap_checkpoint_key(const std::string& key);

}  // namespace segmux::sam31
