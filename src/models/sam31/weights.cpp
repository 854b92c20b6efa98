#include "models/sam31/weights.h"

#include "io/safetensors.h"

namespace segmux::sam31 {

// Minimal first version: safetensors only. The .pt reader replaces this.
Weights Weights::load(const std::string& path) {
  Weights w;
  TensorFile f = read_safetensors(path);
  for (auto& [k, t] : f.tensors) w.tensors_[k] = t;
  return w;
}

const Tensor& Weights::get(const std::string& key) const {
  auto it = tensors_.find(key);
  SEGMUX_CHECK(it != tensors_.end(), "weight '", key, "' is not in the checkpoint");
  return it->second;
}

std::vector<std::string> Weights::keys() const {
  std::vector<std::string> k;
  for (auto& [name, t] : tensors_) k.push_back(name);
  return k;
}

}  // namespace segmux::sam31
