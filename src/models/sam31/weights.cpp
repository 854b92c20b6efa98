#include "models/sam31/weights.h"

#include "io/pytorch_zip.h"
#include "io/safetensors.h"

namespace segmux::sam31 {

std::string remap_checkpoint_key(const std::string& key) {
  static const std::pair<std::string, std::string> rules[] = {{"sam3_model.", "detector."},
                                                              {"sam2_predictor.", "tracker."}};
  for (auto& [from, to] : rules)
    if (key.compare(0, from.size(), from) == 0) return to + key.substr(from.size());
  return key;
}

Weights Weights::load(const std::string& path) {
  Weights w;
  auto add = [&](const std::string& file_key, Tensor t, bool complex) {
    std::string key = remap_checkpoint_key(file_key);
    SEGMUX_CHECK(!w.has(key), path, ": two checkpoint entries map to the weight '", key, "' (one of them is '",
                 file_key, "')");
    w.tensors_[key] = std::move(t);
    if (complex) w.complex_.insert(key);
    w.file_order_.push_back(key);
  };
  std::shared_ptr<Storage> bytes = map_file(path);
  if (looks_like_zip(*bytes)) {
    TorchCheckpoint ckpt = parse_pytorch_checkpoint(bytes, path, "model");
    for (auto& t : ckpt.tensors) add(t.name, std::move(t.tensor), t.complex);
  } else {
    TensorFile f = parse_safetensors(bytes, path);
    for (auto& name : f.names) add(name, f.tensors.at(name), false);
  }
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
