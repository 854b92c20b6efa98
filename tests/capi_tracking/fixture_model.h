// The C API tests' model: a fixture folder's checkpoint, config (converted to the flat model config the
// library reads, as `segmux fixture-config` does) and vocabulary, compiled into the build folder's own
// cache (shared by the tests of this folder).
#pragma once
#include <gtest/gtest.h>
#include <segmux/segmux.h>

#include <filesystem>
#include <string>

#include "io/files.h"
#include "verify/sam31/fixture_config.h"

namespace segmux::test {

// DIR/config.json as a flat model config in the build folder (written atomically: tests run in parallel).
inline std::string fixture_model_config(const std::string& dir) {
  const std::string folder = std::string(SEGMUX_BINARY_DIR) + "/capi-test-configs";
  std::filesystem::create_directories(folder);
  const std::string path = folder + "/" + std::filesystem::path(dir).filename().string() + ".json";
  const std::string text = sam31::config_to_json(verify::load_fixture_config(dir + "/config.json"));
  write_file_atomic(path, text.data(), text.size());
  return path;
}

inline segmux_model* open_fixture_model(const std::string& dir) {
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  const std::string weights = dir + "/weights.safetensors", config = fixture_model_config(dir),
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
