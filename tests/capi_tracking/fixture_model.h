// The C API tests' model: a fixture folder's checkpoint, config and vocabulary, compiled into the build
// folder's own cache (shared by the tests of this folder).
#pragma once
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <string>

namespace segmux::test {

inline segmux_model* open_fixture_model(const std::string& dir) {
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  const std::string weights = dir + "/weights.safetensors", config = dir + "/config.json",
                    vocab = dir + "/tokenizer/bpe_simple_vocab_16e6.txt.gz",
                    cache = std::string(SEGMUX_BINARY_DIR) + "/capi-test-cache";
  mo.checkpoint = weights.c_str();
  mo.config = config.c_str();
  mo.vocab = vocab.c_str();
  mo.cache_dir = cache.c_str();
  segmux_model* m = nullptr;
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_OK) << segmux_last_error();
  return m;
}

}  // namespace segmux::test
