// The fixtures' tiny SAM 3.1 model as the CLI takes it: one place for its folder and the model options
// every command-line test passes (weights, config, vocabulary, a compiled-model cache of the test's own).
#pragma once
#include <string>

namespace segmux::test {

inline std::string tiny_fixture_dir() { return std::string(SEGMUX_FIXTURES) + "/sam31-tiny"; }

inline std::string tiny_vocab() { return tiny_fixture_dir() + "/tokenizer/bpe_simple_vocab_16e6.txt.gz"; }

// `--weights ... --config ... --vocab ... --cache-dir CACHE`; `weights_file` names the checkpoint form
// (weights.safetensors or weights.pt: the same weights).
inline std::string tiny_model_args(const std::string& cache_dir,
                                   const std::string& weights_file = "weights.safetensors") {
  const std::string dir = tiny_fixture_dir();
  return "--weights " + dir + "/" + weights_file + " --config " + dir + "/config.json --vocab " + tiny_vocab() +
         " --cache-dir " + cache_dir;
}

}  // namespace segmux::test
